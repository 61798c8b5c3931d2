import type { CoapMessage } from '../coap/index.js';
import { AppError, type ErrorCode } from '../errors.js';
import type { JsonRecord } from './json-values.js';
import { parsePath, type Lwm2mPath } from './model.js';

/** The LwM2M operations the service sends to devices (Core 6.3 Device Management, 6.4 Information Reporting). */
export const LWM2M_OPERATIONS = ['read', 'write', 'exec', 'create', 'delete', 'discover', 'writeAttributes', 'observe', 'cancelObserve', 'readComposite', 'writeMulti', 'observeComposite'] as const;
export type Lwm2mOperation = (typeof LWM2M_OPERATIONS)[number];

export interface OperationRequest {
  readonly operation: Lwm2mOperation;
  readonly path: string;
  /** readComposite: the paths to read in one request (LwM2M 1.1 Read-Composite). */
  readonly paths?: readonly string[] | undefined;
  /** write / create: `{ "/3/0/14": "+02:00", … }` (absolute paths) or, for a single resource, `value`. */
  readonly values?: Readonly<Record<string, unknown>> | undefined;
  readonly value?: unknown;
  /**
   * Content format by name (`tlv`, `senml-cbor`, `json`, …). Default: the endpoint's or service's
   * `preferredFormat`, else what worked with the device before, else the best it announced (content-formats.ts);
   * a 4.06/4.15 answer is then tried once more in the next format.
   */
  readonly format?: string | undefined;
  /** write: partial update (CoAP POST) instead of replace (PUT). */
  readonly partial?: boolean | undefined;
  /** cancelObserve: the observation's token (hex), instead of its path or paths. */
  readonly token?: string | undefined;
  /** exec arguments (Core 5.4.5: `0='v',1`). */
  readonly args?: string | undefined;
  /** writeAttributes: `{ pmin: 10, pmax: 60, gt: 20.5, … }`. */
  readonly attributes?: Readonly<Record<string, string | number>> | undefined;
  readonly timeoutMs: number;
  /** Do not try to send now: wait in the device queue for its next update (SPEC States). */
  readonly directToQueue?: boolean | undefined;
  /** How long the request may wait in the device queue; default `timeoutMs`. */
  readonly queueTimeoutMs?: number | undefined;
}

export interface OperationResult {
  readonly operation: Lwm2mOperation;
  readonly path: string;
  /** The device's CoAP response code, e.g. `2.05`. */
  readonly code: string;
  /** read: the values the device returned. */
  readonly values?: JsonRecord[] | undefined;
  /** discover: the links (objects, instances, resources with attributes). */
  readonly links?: { target: string; attributes: { name: string; value?: string }[] }[] | undefined;
  /** create: where the new instance is (`/3303/1`). */
  readonly location?: string | undefined;
  /** Ties the request to the `lwm2m-data` event it produced (observe: the observation's token, also on its notifications). */
  readonly token: string;
  readonly durationMs: number;
  /** observe: whether the device accepted the observation (its answer carried Observe) and notifications follow. */
  readonly observing?: boolean | undefined;
}

/** The request's path, checked against what its operation applies to (object, instance, resource …). */
export function checkedPath(request: OperationRequest): Lwm2mPath {
  let path: Lwm2mPath;
  try {
    path = parsePath(request.path);
  } catch (error) {
    throw invalid((error as Error).message);
  }
  const depth = [path.objectId, path.instanceId, path.resourceId, path.resourceInstanceId].filter((id) => id !== undefined).length;
  const allowed: Record<Lwm2mOperation, [number, number]> = {
    read: [1, 4],
    readComposite: [0, 0],
    observeComposite: [0, 0],
    writeMulti: [0, 0],
    discover: [1, 3],
    write: [2, 4],
    writeAttributes: [1, 4],
    exec: [3, 3],
    create: [1, 1],
    delete: [2, 2],
    observe: [1, 4],
    cancelObserve: [0, 4],
  };
  const [min, max] = allowed[request.operation];
  if (depth < min || depth > max) throw invalid(`${request.operation} does not apply to ${request.path}`);
  return path;
}

export function invalid(message: string): AppError {
  return new AppError('IOTB_LWM2M_REQUEST_INVALID', message);
}

const ERROR_BY_CODE: Record<string, ErrorCode> = {
  '4.00': 'IOTB_LWM2M_DEVICE_BAD_REQUEST',
  '4.01': 'IOTB_LWM2M_DEVICE_REFUSED',
  '4.03': 'IOTB_LWM2M_DEVICE_REFUSED',
  '4.04': 'IOTB_LWM2M_DEVICE_NOT_FOUND',
  '4.05': 'IOTB_LWM2M_DEVICE_NOT_ALLOWED',
  '4.06': 'IOTB_LWM2M_DEVICE_FORMAT',
  '4.15': 'IOTB_LWM2M_DEVICE_FORMAT',
};

/** The `IOTB_LWM2M_*` error of a device's error answer. */
export function deviceError(response: CoapMessage): AppError {
  return new AppError(ERROR_BY_CODE[response.code] ?? 'IOTB_LWM2M_DEVICE_ERROR', undefined, {
    coapCode: response.code,
    ...(response.payload.length > 0 ? { diagnostic: response.payload.toString('utf8').slice(0, 200) } : {}),
  });
}
