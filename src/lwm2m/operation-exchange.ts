import type { Logger } from 'pino';
import { contentFormat, isSuccess, OptionNumber, type CoapMessage } from '../coap/index.js';
import type { DevicePresence } from '../devices/presence.js';
import type { Endpoint } from '../domain/endpoints.js';
import { randomText } from '../domain/ids.js';
import { AppError } from '../errors.js';
import { CodecError, decode, decodeLinks, formatName } from './codecs/index.js';
import { isFormatRefusal, MAX_FORMAT_ATTEMPTS } from './content-formats.js';
import type { DeviceObservations } from './device-observations.js';
import { lwm2mRecordsToJson, translatedNames } from './json-values.js';
import type { LastKnownStore } from './last-known-store.js';
import { CONTENT_FORMATS, formatPath, parsePath, type Lwm2mRecord } from './model.js';
import type { ObjectRegistry } from './objects/registry.js';
import { checkedPath, deviceError, type OperationRequest, type OperationResult } from './operations.js';
import type { RequestEncoding } from './request-encoding.js';
import type { Lwm2mServer } from './server.js';

/**
 * One operation sent to a registered device now (Core 6.3): its request in the formats to try, the device's answer
 * mapped to a result or an `IOTB_LWM2M_*` error; a read's values become `lwm2m-data` and the last-known values.
 * Observe and Cancel Observation go to the device's observations.
 */
export class OperationExchange {
  readonly #server: Pick<Lwm2mServer, 'registrationOf' | 'send'>;
  readonly #presence: DevicePresence;
  readonly #objects: ObjectRegistry;
  readonly #logger: Logger;
  /** Last-known values per endpoint and path, kept across restarts. */
  readonly #lastKnown: LastKnownStore;
  readonly #encoding: RequestEncoding;
  readonly #observations: DeviceObservations;

  constructor(deps: {
    server: Pick<Lwm2mServer, 'registrationOf' | 'send'>;
    presence: DevicePresence;
    objects: ObjectRegistry;
    logger: Logger;
    lastKnown: LastKnownStore;
    encoding: RequestEncoding;
    observations: DeviceObservations;
  }) {
    this.#server = deps.server;
    this.#presence = deps.presence;
    this.#objects = deps.objects;
    this.#logger = deps.logger;
    this.#lastKnown = deps.lastKnown;
    this.#encoding = deps.encoding;
    this.#observations = deps.observations;
  }

  /** One request/response exchange with a registered device. */
  async exchange(endpoint: Endpoint, request: OperationRequest): Promise<OperationResult> {
    const registration = this.#server.registrationOf(endpoint.id);
    if (!registration) throw new AppError('IOTB_LWM2M_NOT_REGISTERED');
    const path = checkedPath(request);
    const models = this.#objects.lookupFor(endpoint.accountId);
    const formats = await this.#encoding.formats(endpoint, request, path, registration, models);
    if (request.operation === 'observe' || request.operation === 'observeComposite') return this.#observations.observe(endpoint, registration, request, formatPath(path), formats, models);
    if (request.operation === 'cancelObserve') return this.#observations.cancel(endpoint, request, formatPath(path));
    const token = randomText(4, 'hex');
    const started = performance.now();
    let response: CoapMessage;
    let exchanges = 0;
    const attempt = async (format: number) => {
      const coapRequest = this.#encoding.build(request, path, registration, models, format);
      try {
        return await this.#server.send(registration, coapRequest, { timeoutMs: request.timeoutMs, onExchange: () => exchanges++ });
      } catch (error) {
        if (error instanceof AppError) throw error; // refused before sending (IOTB_DEVICE_ADDRESS_REFUSED)
        this.#logger.debug({ err: error, endpointId: endpoint.id, operation: request.operation }, 'LwM2M request got no answer');
        throw new AppError('IOTB_LWM2M_TIMEOUT', undefined, { timeoutMs: request.timeoutMs });
      }
    };
    let used = formats.list[0]!;
    response = await attempt(used);
    // Refused for its format, which nobody chose: again in the next formats the device may take.
    for (let next = 1; isFormatRefusal(response.code) && !formats.chosen && next < Math.min(formats.list.length, MAX_FORMAT_ATTEMPTS); next++) response = await attempt((used = formats.list[next]!));
    if (isSuccess(response.code)) this.#encoding.worked(endpoint, formats, used);
    const durationMs = Math.round((performance.now() - started) * 1000) / 1000;
    const text = formatPath(path);
    if (!isSuccess(response.code)) throw deviceError(response);
    const result: { -readonly [K in keyof OperationResult]: OperationResult[K] } = { operation: request.operation, path: text, code: response.code, token, durationMs };
    if (request.operation === 'read' || request.operation === 'readComposite') {
      const format = contentFormat(response) ?? CONTENT_FORMATS.text;
      let records: Lwm2mRecord[];
      try {
        records = decode(format, response.payload, { basePath: text, models });
      } catch (error) {
        throw new AppError('IOTB_LWM2M_DEVICE_ERROR', undefined, { reason: error instanceof CodecError ? error.message : String(error), contentFormat: format });
      }
      result.values = lwm2mRecordsToJson(records);
      await this.#lastKnown.put(endpoint.id, result.values);
      await this.#presence.emit(endpoint, 'lwm2m-data', {
        operation: 'read',
        path: text,
        objectIds: [...new Set(records.map((r) => parsePath(r.path).objectId))],
        token,
        duration: durationMs,
        // CoAP request/response exchanges the read took: one, or one per Block1/Block2 block.
        requests: exchanges,
        format: formatName(format),
        values: result.values,
        names: translatedNames(models, result.values),
      });
    } else if (request.operation === 'discover') {
      try {
        result.links = decodeLinks(response.payload).map((link) => ({ target: link.target, attributes: link.attributes.map(({ name, value }) => ({ name, ...(value === undefined ? {} : { value }) })) }));
      } catch (error) {
        throw new AppError('IOTB_LWM2M_DEVICE_ERROR', undefined, { reason: (error as Error).message });
      }
    } else if (request.operation === 'create') {
      const location = response.options.filter((o) => o.number === OptionNumber.LocationPath).map((o) => o.value.toString('utf8'));
      if (location.length > 0) result.location = `/${location.join('/')}`;
    }
    return result;
  }
}
