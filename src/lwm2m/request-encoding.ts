import { option, OptionNumber, uriPathOptions, type CoapOption } from '../coap/index.js';
import type { Endpoint } from '../domain/endpoints.js';
import { encode, encodePaths, formatByName } from './codecs/index.js';
import { formatsToTry, type PayloadKind } from './content-formats.js';
import { fromJsonValue } from './json-values.js';
import { CONTENT_FORMATS, formatPath, type Lwm2mPath, type Lwm2mRecord } from './model.js';
import type { ObjectRegistry } from './objects/registry.js';
import { checkedPath, invalid, type Lwm2mOperation, type OperationRequest } from './operations.js';
import type { Registration } from './registration.js';
import type { Lwm2mServer } from './server.js';

/** The formats tried for one request, best first; `chosen` when the caller named it (never tried in another). */
export interface Formats {
  readonly list: readonly number[];
  readonly chosen: boolean;
  /** What the payload holds; undefined when the caller chose or the operation carries no values. */
  readonly kind: PayloadKind | undefined;
}

/** Operations whose request or answer carries values in a content format. */
const FORMATTED = new Set<Lwm2mOperation>(['read', 'observe', 'write', 'create', 'readComposite', 'writeMulti', 'observeComposite']);

/**
 * How an operation goes to a device: the content formats to try for it (content-formats.ts, with the endpoint's
 * preference and what worked with the device before) and its CoAP request in one of them.
 */
export class RequestEncoding {
  readonly #server: Pick<Lwm2mServer, 'serviceOptions'>;
  /** The format that last worked with each endpoint, by payload kind; forgotten at a new registration. */
  readonly #workedFormats = new Map<string, Map<PayloadKind, number>>();

  constructor(server: Pick<Lwm2mServer, 'serviceOptions'>) {
    this.#server = server;
  }

  /** The device registered anew: what worked with its previous registration is forgotten. */
  forget(endpointId: string): void {
    this.#workedFormats.delete(endpointId);
  }

  /** The CoAP request of `request` for the device, its values (if any) in `format`. */
  build(request: OperationRequest, path: Lwm2mPath, registration: Registration, models: ReturnType<ObjectRegistry['lookupFor']>, format: number) {
    const text = formatPath(path);
    const uri = uriPathOptions(registration.rootPath === '/' ? text : `${registration.rootPath}${text}`);
    switch (request.operation) {
      case 'read':
      case 'observe':
      case 'cancelObserve':
        return { code: '0.01' as const, options: [...uri, option(OptionNumber.Accept, format)] };
      case 'discover':
        return { code: '0.01' as const, options: [...uri, option(OptionNumber.Accept, CONTENT_FORMATS.linkFormat)] };
      case 'readComposite':
      case 'observeComposite': {
        // Read-Composite (Core 6.3.1, Transport 6.4.5): FETCH on the root with the list of paths.
        const paths = request.paths ?? [];
        if (paths.length === 0) throw invalid(`${request.operation} needs "paths"`);
        for (const each of paths) checkedPath({ ...request, operation: 'read', path: each });
        let payload: Uint8Array;
        try {
          payload = encodePaths(format, paths);
        } catch (error) {
          throw invalid((error as Error).message);
        }
        return { code: '0.05' as const, options: [...uri, option(OptionNumber.ContentFormat, format), option(OptionNumber.Accept, format)], payload: Buffer.from(payload) };
      }
      case 'writeMulti': {
        // Write-Composite (Core 6.3.3): iPATCH on the root with values of any objects, absolute paths.
        const records = this.#records(request, text, models);
        let payload: Uint8Array;
        try {
          payload = encode(format, records, { basePath: '/', models });
        } catch (error) {
          throw invalid(error instanceof Error ? error.message : String(error));
        }
        return { code: '0.07' as const, options: [...uri, option(OptionNumber.ContentFormat, format)], payload: Buffer.from(payload) };
      }
      case 'delete':
        return { code: '0.04' as const, options: uri };
      case 'exec':
        return { code: '0.02' as const, options: uri, payload: request.args ?? '' };
      case 'writeAttributes': {
        const attributes = Object.entries(request.attributes ?? {});
        if (attributes.length === 0) throw invalid('writeAttributes needs attributes, e.g. {"pmin": 10}');
        const query: CoapOption[] = attributes.map(([name, value]) => option(OptionNumber.UriQuery, `${name}=${value}`));
        return { code: '0.03' as const, options: [...uri, ...query] };
      }
      case 'write':
      case 'create': {
        const records = this.#records(request, text, models);
        let payload: Uint8Array;
        try {
          payload = encode(format, records, { basePath: text, models });
        } catch (error) {
          throw invalid(error instanceof Error ? error.message : String(error));
        }
        const code = request.operation === 'create' || request.partial ? ('0.02' as const) : ('0.03' as const);
        return { code, options: [...uri, option(OptionNumber.ContentFormat, format)], payload: Buffer.from(payload) };
      }
    }
  }

  #records(request: OperationRequest, base: string, models: ReturnType<ObjectRegistry['lookupFor']>): Lwm2mRecord[] {
    const entries: [string, unknown][] = request.values !== undefined ? Object.entries(request.values) : request.value !== undefined ? [[base, request.value]] : [];
    if (entries.length === 0) throw invalid(`${request.operation} needs "value" or "values"`);
    try {
      return entries.map(([path, value]) => fromJsonValue(path, value, models));
    } catch (error) {
      throw invalid((error as Error).message);
    }
  }

  /**
   * The formats to try for a request: the caller's alone when it chose one (`chosen`), else the candidates
   * of content-formats.ts for what the payload holds. `kind` is undefined for operations without a payload
   * format (discover, exec, delete, write-attributes).
   */
  async formats(endpoint: Endpoint, request: OperationRequest, path: Lwm2mPath, registration: Registration, models: ReturnType<ObjectRegistry['lookupFor']>): Promise<Formats> {
    const composite = request.operation === 'readComposite' || request.operation === 'writeMulti' || request.operation === 'observeComposite';
    if (composite && registration.lwm2mVersion === '1.0') throw invalid(`${request.operation} needs an LwM2M 1.1 device (this one registered with 1.0)`);
    if (request.format !== undefined) {
      const format = formatByName(request.format);
      if (format === undefined) throw invalid(`unknown format "${request.format}"`);
      return { list: [format], chosen: true, kind: undefined };
    }
    if (!FORMATTED.has(request.operation)) return { list: [CONTENT_FORMATS.linkFormat], chosen: true, kind: undefined };
    const kind: PayloadKind = composite ? 'composite' : payloadKind(path, models);
    const list = formatsToTry({
      lwm2mVersion: registration.lwm2mVersion,
      announced: registration.contentFormats,
      kind,
      preferred: await this.#preferredFormat(endpoint, registration),
      remembered: this.#workedFormats.get(endpoint.id)?.get(kind),
    });
    return { list, chosen: false, kind };
  }

  /** `preferredFormat` of the endpoint (parameter) or its service (option), by name; unknown names are ignored. */
  async #preferredFormat(endpoint: Endpoint, registration: Registration): Promise<number | undefined> {
    const own = endpoint.parameters.preferredFormat;
    const name = typeof own === 'string' ? own : (await this.#server.serviceOptions(registration))?.preferredFormat;
    return typeof name === 'string' ? formatByName(name) : undefined;
  }

  /** Remembers the format a request went out in and the device took, for the request's kind. */
  worked(endpoint: Endpoint, formats: Formats, used: number): void {
    if (formats.chosen || formats.kind === undefined) return;
    let worked = this.#workedFormats.get(endpoint.id);
    if (!worked) this.#workedFormats.set(endpoint.id, (worked = new Map<PayloadKind, number>()));
    worked.set(formats.kind, used);
  }
}

/** One resource value (a resource instance, or a resource the model says is single) or several. */
function payloadKind(path: Lwm2mPath, models: ReturnType<ObjectRegistry['lookupFor']>): PayloadKind {
  if (path.resourceInstanceId !== undefined) return 'single';
  if (path.resourceId === undefined || path.objectId === undefined) return 'multiple';
  return models.resource(path.objectId, path.resourceId)?.multiple === false ? 'single' : 'multiple';
}
