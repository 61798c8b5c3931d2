import type { Logger } from 'pino';
import { contentFormat, isSuccess, option, OptionNumber, uriPathOptions, type CoapMessage, type CoapOption, type Observation } from '../coap/index.js';
import type { DevicePresence } from '../devices/presence.js';
import type { Endpoint } from '../domain/endpoints.js';
import { randomText } from '../domain/ids.js';
import { AppError, type ErrorCode } from '../errors.js';
import { CodecError, decode, decodeLinks, encode, encodePaths, formatByName, formatName } from './codecs/index.js';
import { formatsToTry, isFormatRefusal, MAX_FORMAT_ATTEMPTS, type PayloadKind } from './content-formats.js';
import { fromJsonValue, lwm2mRecordsToJson, translatedNames, type JsonRecord } from './json-values.js';
import { CONTENT_FORMATS, formatPath, parsePath, type Lwm2mPath, type Lwm2mRecord } from './model.js';
import type { LastKnownStore } from './last-known-store.js';
import type { Lwm2mChannel } from './lwm2m-channel.js';
import type { ObservationStore, StoredObservation } from './observation-store.js';
import type { DeviceQueueStore } from './queue-store.js';
import type { ObjectRegistry } from './objects/registry.js';
import { observationKey, ObservationTable, type ActiveObservation } from './observations.js';
import { DeviceQueue, type QueueOutcome } from './device-queue.js';
import { HeldRequests, type HeldSummary, type HoldOptions } from './held-requests.js';
import { checkedPath, invalid, type Lwm2mOperation, type OperationRequest, type OperationResult } from './operations.js';
import type { Registration } from './registration.js';
import type { Lwm2mServer } from './server.js';

/** The formats tried for one request, best first; `chosen` when the caller named it (never tried in another). */
interface Formats {
  readonly list: readonly number[];
  readonly chosen: boolean;
  /** What the payload holds; undefined when the caller chose or the operation carries no values. */
  readonly kind: PayloadKind | undefined;
}

/** Operations whose request or answer carries values in a content format. */
const FORMATTED = new Set<Lwm2mOperation>(['read', 'observe', 'write', 'create', 'readComposite', 'writeMulti', 'observeComposite']);

const ERROR_BY_CODE: Record<string, ErrorCode> = {
  '4.00': 'IOTB_LWM2M_DEVICE_BAD_REQUEST',
  '4.01': 'IOTB_LWM2M_DEVICE_REFUSED',
  '4.03': 'IOTB_LWM2M_DEVICE_REFUSED',
  '4.04': 'IOTB_LWM2M_DEVICE_NOT_FOUND',
  '4.05': 'IOTB_LWM2M_DEVICE_NOT_ALLOWED',
  '4.06': 'IOTB_LWM2M_DEVICE_FORMAT',
  '4.15': 'IOTB_LWM2M_DEVICE_FORMAT',
};

/**
 * Device management and information reporting towards registered devices (OMA LwM2M Core 6.3/6.4):
 * builds the CoAP request of each operation, maps the device's answer to a result or an `IOTB_LWM2M_*`
 * error, emits `lwm2m-data` for reads and keeps the last-known value of every resource read.
 */
export class DeviceManagement implements Lwm2mChannel {
  readonly #server: Lwm2mServer;
  readonly #presence: DevicePresence;
  readonly #objects: ObjectRegistry;
  readonly #logger: Logger;
  /** Last-known values per endpoint and path, kept across restarts. */
  readonly #lastKnown: LastKnownStore;
  /** Requests waiting for a device in queue mode or without a registration. */
  readonly #queue: DeviceQueue;
  /** Requests whose outcome is an `lwm2m-result` event, kept across restarts. */
  readonly #held: HeldRequests;
  /** Active observations per endpoint and path; they end with the device's registration (Core 6.4.1). */
  readonly #observations = new ObservationTable();
  /** Active observations as stored, for a restart. */
  readonly #observationStore: ObservationStore;
  /** Registrations taken up from the store whose observations are being resumed, by id. */
  readonly #adopting = new Map<string, Promise<unknown>>();
  /** In-process listeners to every value a device notified or answered to an observe (FOTA follows /5/0/3 with it). */
  readonly #valueListeners: ((endpoint: Endpoint, values: readonly JsonRecord[]) => void)[] = [];
  /** The format that last worked with each endpoint, by payload kind; forgotten at a new registration. */
  readonly #workedFormats = new Map<string, Map<PayloadKind, number>>();

  constructor(deps: {
    server: Lwm2mServer;
    presence: DevicePresence;
    objects: ObjectRegistry;
    logger: Logger;
    lastKnown: LastKnownStore;
    observations: ObservationStore;
    queue: DeviceQueueStore;
    endpointById: (accountId: string, id: string) => Promise<Endpoint | undefined>;
  }) {
    this.#server = deps.server;
    const canSend = (endpointId: string) => {
      const registration = this.#server.registrationOf(endpointId);
      return registration !== undefined && this.#server.isAwake(registration);
    };
    this.#queue = new DeviceQueue({ canSend, send: (endpoint, request) => this.#exchange(endpoint, request) });
    this.#held = new HeldRequests({ queue: this.#queue, store: deps.queue, emit: (endpoint, type, data) => deps.presence.emit(endpoint, type, data), endpointById: deps.endpointById, canSend, logger: deps.logger });
    this.#lastKnown = deps.lastKnown;
    this.#observationStore = deps.observations;
    this.#presence = deps.presence;
    this.#objects = deps.objects;
    this.#logger = deps.logger;
    this.#server.onRegistered((registration) => {
      this.#queue.purge(registration.endpointId);
      this.#workedFormats.delete(registration.endpointId);
      if (!this.#server.clustered) return;
      // In a cluster its held requests may have been made on another node: taken up from the store, and those the
      // new registration ends (all but proxy_send's) end here too.
      void this.#held
        .takeUp(registration.endpointId, registration.accountId, { registeredAt: Date.parse(registration.registeredAt) })
        .catch((error: unknown) => this.#logger.warn({ err: error, endpointId: registration.endpointId }, 'could not take up held LwM2M requests'));
    });
    // Another node registered or took up the device: its observations and waiting requests are that node's now.
    this.#server.onReleased((endpointId) => {
      this.#observations.dropEndpoint(endpointId);
      this.#queue.release(endpointId);
    });
    this.#server.onAwake((registration, heardAt) => void this.#queue.drain(registration.endpointId, heardAt));
    // A registration another node made: its observations go on here.
    this.#server.onAdopted((registration) => {
      const resuming = this.#held
        .takeUp(registration.endpointId, registration.accountId)
        .then(() => this.#observationStore.ofRegistration(registration.id))
        .then((stored) => this.#resumeObservations(stored))
        .catch((error: unknown) => this.#logger.warn({ err: error, registrationId: registration.id }, 'could not take up stored LwM2M observations'))
        .finally(() => this.#adopting.delete(registration.id));
      this.#adopting.set(registration.id, resuming);
    });
    // A notification for an observation another node made: its registration and observations go on here.
    this.#server.onStrayNotification(async (token, peer) => {
      if (!/^[0-9a-f]{2,16}$/.test(token)) return false;
      const stored = await this.#observationStore.get(token);
      const registration = stored && (await this.#server.takeUpFor(stored.registrationId, peer));
      if (!stored || !registration) return false;
      await this.#adopting.get(registration.id);
      if (!this.#observations.list(stored.endpointId).some((entry) => entry.token === token)) await this.#resume(stored);
      return this.#observations.list(stored.endpointId).some((entry) => entry.token === token);
    });
    this.#server.onRegistrationEnd((endpointId) => {
      if (this.#observations.dropEndpoint(endpointId).length === 0) return;
      this.#observationStore.removeEndpoint(endpointId).catch((error: unknown) => this.#logger.warn({ err: error, endpointId }, 'could not forget stored LwM2M observations'));
    });
  }

  /** Calls `listener` with the values of every notification and first observe answer, after they are remembered. */
  onValues(listener: (endpoint: Endpoint, values: readonly JsonRecord[]) => void): void {
    this.#valueListeners.push(listener);
  }

  /**
   * Calls `listener` with the new registration at every Register (not an Update), and with undefined when a
   * registration ends (a De-register, or just before a new Register replaces it).
   */
  onRegistrationChange(listener: (endpointId: string, registration: Registration | undefined) => void): void {
    this.#server.onRegistered((registration) => listener(registration.endpointId, registration));
    this.#server.onRegistrationEnd((endpointId) => listener(endpointId, undefined));
  }

  /** How many requests wait for the device. */
  queued(endpoint: Endpoint): number {
    return this.#queue.size(endpoint.id);
  }

  /**
   * Sends the request now when the device can be reached; otherwise (queue mode and asleep, no
   * registration, `directToQueue`, or earlier requests still waiting) it waits in the device queue until
   * the device's next update or Send, and then goes out in order (SPEC States). `onQueued` is told when
   * it waits. A new registration purges the queue: each waiting request fails with `IOTB_LWM2M_QUEUE_PURGED`.
   * `signal` withdraws a request still waiting when it aborts (it fails with the signal's reason); one already
   * sent runs to its answer.
   */
  async perform(endpoint: Endpoint, request: OperationRequest, hooks: { onQueued?: () => void; signal?: AbortSignal } = {}): Promise<OperationResult> {
    const path = checkedPath(request);
    // Forgetting an observation is the server's own business: it never waits for the device.
    if (request.operation === 'cancelObserve') return this.#cancelObserve(endpoint, request, formatPath(path));
    const { signal } = hooks;
    signal?.throwIfAborted();
    const registration = this.#server.registrationOf(endpoint.id);
    if (registration && !request.directToQueue && this.#queue.size(endpoint.id) === 0 && this.#server.isAwake(registration)) return this.#exchange(endpoint, request);
    const now = Date.now();
    let withdraw: (() => void) | undefined;
    const result = new Promise<OperationResult>((resolve, reject) => {
      const settle = (outcome: QueueOutcome) => {
        signal?.removeEventListener('abort', withdraw!);
        if ('delivered' in outcome) resolve(outcome.delivered);
        else if ('failed' in outcome) reject(outcome.failed instanceof Error ? outcome.failed : new Error(String(outcome.failed)));
        else reject('expired' in outcome ? outcome.expired : outcome.purged);
      };
      withdraw = () => {
        if (this.#queue.withdraw(endpoint.id, settle)) reject(signal!.reason instanceof Error ? signal!.reason : new Error(String(signal!.reason)));
      };
      this.#queue.add(endpoint, {
        request,
        createdAt: now,
        expiresAt: now + (request.queueTimeoutMs ?? request.timeoutMs),
        lifecycle: 'purge',
        waitsForWake: request.directToQueue,
        settle,
      });
    });
    signal?.addEventListener('abort', withdraw!, { once: true });
    hooks.onQueued?.();
    // Waiting behind requests of a device that is awake (or became so): start sending.
    if (!request.directToQueue) void this.#queue.drain(endpoint.id);
    return result;
  }

  /**
   * An asynchronous request (a context was given; `kind: 'proxy'` for lwm2m.proxy_send): stored, sent when
   * the device can take it, its outcome an `lwm2m-result` event with the context. Resolves once it is stored.
   */
  async hold(endpoint: Endpoint, request: OperationRequest, options: HoldOptions): Promise<{ id: string; queued: boolean }> {
    const path = checkedPath(request);
    if (request.operation === 'cancelObserve' || request.operation === 'observe' || request.operation === 'observeComposite') {
      throw invalid(`${request.operation} is not sent asynchronously: call it and wait for the answer`);
    }
    return this.#held.hold(endpoint, { ...request, path: formatPath(path) }, options);
  }

  /** The requests held for the device (asynchronous ones and lwm2m.proxy_send), in order. */
  heldRequests(endpoint: Endpoint): HeldSummary[] {
    return this.#held.list(endpoint.id);
  }

  /** Withdraws a held request before it is sent (an `lwm2m-result` says so); false when none waits with that id. */
  cancelHeld(endpoint: Endpoint, id: string): Promise<boolean> {
    return this.#held.cancel(endpoint, id);
  }

  /** Takes up, after a restart, the observations and held requests stored before it (registrations first). */
  async resume(): Promise<void> {
    if (!this.#server.clustered) {
      await this.#resumeObservations(await this.#observationStore.all());
      await this.#held.resume();
      return;
    }
    // A cluster node: only what belongs to the registrations it restored (the devices it heard last). The rest is
    // another node's, or is taken up where the device's next message arrives; the store keeps it.
    const held = (stored: { endpointId: string; registrationId: string }) => this.#server.registrationOf(stored.endpointId)?.id === stored.registrationId;
    await this.#resumeObservations((await this.#observationStore.all()).filter(held));
    await this.#held.resume((endpointId) => this.#server.registrationOf(endpointId) !== undefined);
  }

  /**
   * Cluster mode (Lwm2mOrphanSweep): ends what no node holds, namely held requests that expired before `before`
   * and the stored observations of registrations that are gone.
   */
  async endOrphans(before: number, limit: number): Promise<{ requests: number; observations: number }> {
    const requests = await this.#held.endOrphans(before, limit);
    const observations = await this.#observationStore.removeOrphans();
    return { requests, observations };
  }

  /** Stops the timers of what waits (the process stops). */
  stop(): void {
    this.#queue.stop();
  }

  registrationOf(endpoint: Endpoint): Registration | undefined {
    return this.#server.registrationOf(endpoint.id);
  }

  /** The name of an object as the endpoint's account knows it (shipped or uploaded definition). */
  objectName(endpoint: Endpoint, objectId: number): string | undefined {
    return this.#objects.lookupFor(endpoint.accountId).object(objectId)?.name;
  }

  /** The last value read or notified of each of the endpoint's resources, by path. */
  async lastKnown(endpoint: Endpoint): Promise<JsonRecord[]> {
    return (await this.#lastKnown.list(endpoint.id)).sort((a, b) => a.path.localeCompare(b.path, 'en', { numeric: true }));
  }

  /** One request/response exchange with a registered device. */
  async #exchange(endpoint: Endpoint, request: OperationRequest): Promise<OperationResult> {
    const registration = this.#server.registrationOf(endpoint.id);
    if (!registration) throw new AppError('IOTB_LWM2M_NOT_REGISTERED');
    const path = checkedPath(request);
    const models = this.#objects.lookupFor(endpoint.accountId);
    const formats = await this.#formats(endpoint, request, path, registration, models);
    if (request.operation === 'observe' || request.operation === 'observeComposite') return this.#observe(endpoint, registration, request, formatPath(path), formats, models);
    if (request.operation === 'cancelObserve') return this.#cancelObserve(endpoint, request, formatPath(path));
    const token = randomText(4, 'hex');
    const started = performance.now();
    let response: CoapMessage;
    let exchanges = 0;
    const attempt = async (format: number) => {
      const coapRequest = this.#build(request, path, registration, models, format);
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
    if (isSuccess(response.code)) this.#formatWorked(endpoint, formats, used);
    const durationMs = Math.round((performance.now() - started) * 1000) / 1000;
    const text = formatPath(path);
    if (!isSuccess(response.code)) {
      throw new AppError(ERROR_BY_CODE[response.code] ?? 'IOTB_LWM2M_DEVICE_ERROR', undefined, {
        coapCode: response.code,
        ...(response.payload.length > 0 ? { diagnostic: response.payload.toString('utf8').slice(0, 200) } : {}),
      });
    }
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
      await this.#remember(endpoint, result.values);
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

  #build(request: OperationRequest, path: Lwm2mPath, registration: Registration, models: ReturnType<ObjectRegistry['lookupFor']>, format: number) {
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
  async #formats(endpoint: Endpoint, request: OperationRequest, path: Lwm2mPath, registration: Registration, models: ReturnType<ObjectRegistry['lookupFor']>): Promise<Formats> {
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
  #formatWorked(endpoint: Endpoint, formats: Formats, used: number): void {
    if (formats.chosen || formats.kind === undefined) return;
    let worked = this.#workedFormats.get(endpoint.id);
    if (!worked) this.#workedFormats.set(endpoint.id, (worked = new Map<PayloadKind, number>()));
    worked.set(formats.kind, used);
  }

  #remember(endpoint: Endpoint, values: readonly JsonRecord[]): Promise<void> {
    return this.#lastKnown.put(endpoint.id, values);
  }


  /** The endpoint's active observations (path, token, since). */
  observations(endpoint: Endpoint): { path: string; paths?: string[]; token: string; since: string }[] {
    return this.#observations.list(endpoint.id).map(({ path, paths, token, since }) => ({ path, ...(paths && { paths: [...paths] }), token, since }));
  }

  /**
   * Observe (Core 6.4.1, RFC 7641): GET with Observe: 0. The first answer is returned like a read (and
   * emitted as `lwm2m-data`); every notification becomes `lwm2m-data` with the observation's token.
   */
  async #observe(endpoint: Endpoint, registration: Registration, request: OperationRequest, path: string, formats: Formats, models: ReturnType<ObjectRegistry['lookupFor']>): Promise<OperationResult> {
    const handlers = this.#observationHandlers(endpoint, path, models);
    const started = performance.now();
    const attempt = async (format: number): Promise<Observation> => {
      const coapRequest = this.#build(request, parsePath(path), registration, models, format);
      try {
        return await this.#server.observe(registration, coapRequest, handlers.onNotification, { timeoutMs: request.timeoutMs, onEnd: handlers.onEnd });
      } catch (error) {
        if (error instanceof AppError) throw error; // refused before sending (IOTB_DEVICE_ADDRESS_REFUSED)
        this.#logger.debug({ err: error, endpointId: endpoint.id, operation: 'observe' }, 'LwM2M request got no answer');
        throw new AppError('IOTB_LWM2M_TIMEOUT', undefined, { timeoutMs: request.timeoutMs });
      }
    };
    let used = formats.list[0]!;
    let observation = await attempt(used);
    for (let next = 1; isFormatRefusal(observation.response.code) && !formats.chosen && next < Math.min(formats.list.length, MAX_FORMAT_ATTEMPTS); next++) observation = await attempt((used = formats.list[next]!));
    if (isSuccess(observation.response.code)) this.#formatWorked(endpoint, formats, used);
    const durationMs = Math.round((performance.now() - started) * 1000) / 1000;
    const { response } = observation;
    if (!isSuccess(response.code)) throw deviceError(response);
    const token = observation.active ? observation.token.toString('hex') : randomText(4, 'hex');
    let values: JsonRecord[];
    try {
      values = this.#decodeValues(response, path, models).values;
    } catch (error) {
      void observation.cancel({ proactive: false });
      throw error;
    }
    // The registration may have ended while the device answered: the observation ends with it.
    const live = this.#server.registrationOf(endpoint.id)?.id === registration.id;
    if (observation.active && live) {
      const paths = request.operation === 'observeComposite' ? request.paths : undefined;
      const entry: ActiveObservation = { path, paths, token, since: new Date().toISOString(), registrationId: registration.id, observation };
      handlers.held.entry = entry;
      const replaced = this.#observations.set(endpoint.id, entry);
      if (replaced) {
        void replaced.observation.cancel({ proactive: false });
        this.#forgetStored(replaced.token);
      }
      // Kept across restarts: the device's notifications for it still become events after one.
      await this.#observationStore.add({ token, endpointId: endpoint.id, registrationId: registration.id, operation: request.operation === 'observeComposite' ? 'observeComposite' : 'observe', path, paths, format: used, since: entry.since });
    } else if (observation.active) {
      void observation.cancel({ proactive: false });
    }
    await this.#emitValues(endpoint, path, token, values, { duration: durationMs, requests: 1, format: formatName(contentFormat(response) ?? CONTENT_FORMATS.text) });
    return { operation: 'observe', path, code: response.code, values, token, durationMs, observing: handlers.held.entry !== undefined };
  }

  /**
   * What an observation of `path` does with what comes: each notification becomes `lwm2m-data` in order
   * (with the observation's token); its end by the device forgets it, in memory and in the store.
   */
  #observationHandlers(endpoint: Endpoint, path: string, models: ReturnType<ObjectRegistry['lookupFor']>) {
    const held: { entry?: ActiveObservation; chain: Promise<void> } = { chain: Promise.resolve() };
    return {
      held,
      onNotification: (notification: CoapMessage) => {
        held.chain = held.chain.then(() => this.#notified(endpoint, path, held.entry?.token ?? notification.token.toString('hex'), notification, models));
      },
      onEnd: (reason: string) => {
        if (!held.entry || !this.#observations.delete(endpoint.id, held.entry)) return;
        this.#forgetStored(held.entry.token);
        this.#logger.debug({ endpointId: endpoint.id, path, reason }, 'LwM2M observation ended by the device');
      },
    };
  }

  /**
   * Takes up the observations stored before a restart whose registration is live again (restored by the
   * server): their notifications become `lwm2m-data` with the same token. The others are forgotten.
   */
  async #resumeObservations(stored: readonly StoredObservation[]): Promise<number> {
    let resumed = 0;
    for (const observation of stored) if (await this.#resume(observation)) resumed++;
    if (resumed > 0) this.#logger.info({ observations: resumed }, 'LwM2M observations resumed');
    return resumed;
  }

  /** One stored observation taken up when its registration is live here; forgotten otherwise. */
  async #resume(stored: StoredObservation): Promise<boolean> {
    const registration = this.#server.registrationOf(stored.endpointId);
    const endpoint = registration?.id === stored.registrationId ? (await this.#presence.findDevices('lwm2m', registration.endpointName)).find((e) => e.id === stored.endpointId) : undefined;
    if (!registration || !endpoint) {
      await this.#observationStore.remove(stored.token);
      return false;
    }
    if (this.#observations.list(endpoint.id).some((entry) => entry.token === stored.token)) return false;
    const models = this.#objects.lookupFor(endpoint.accountId);
    const request: OperationRequest = { operation: stored.operation, path: stored.path, paths: stored.paths, timeoutMs: 0 };
    const handlers = this.#observationHandlers(endpoint, stored.path, models);
    const coapRequest = this.#build(request, parsePath(stored.path), registration, models, stored.format);
    const observation = this.#server.resumeObservation(registration, Buffer.from(stored.token, 'hex'), coapRequest, handlers.onNotification, handlers.onEnd);
    const entry: ActiveObservation = { path: stored.path, paths: stored.paths, token: stored.token, since: stored.since, registrationId: registration.id, observation };
    handlers.held.entry = entry;
    this.#observations.set(endpoint.id, entry);
    return true;
  }

  #forgetStored(token: string): void {
    this.#observationStore.remove(token).catch((error: unknown) => this.#logger.warn({ err: error, token }, 'could not forget a stored LwM2M observation'));
  }

  /**
   * Cancel Observation: a GET (composite: FETCH) with Observe: 1 and the observation's token (RFC 7641 3.6);
   * forgotten either way. The observation is named by its `token`, its `paths` (composite) or its path; `/`
   * alone names the device's composite observation when it has one only.
   */
  async #cancelObserve(endpoint: Endpoint, request: OperationRequest, path: string): Promise<OperationResult> {
    const entry = this.#observationToCancel(endpoint, request, path);
    if (!entry) throw new AppError('IOTB_LWM2M_NOT_OBSERVED');
    this.#observations.delete(endpoint.id, entry);
    await this.#observationStore.remove(entry.token);
    const started = performance.now();
    const response = await entry.observation.cancel({ proactive: true, timeout: request.timeoutMs });
    const durationMs = Math.round((performance.now() - started) * 1000) / 1000;
    // No answer in time: the observation is forgotten anyway, and the device's next notification gets RST.
    return { operation: 'cancelObserve', path: entry.path, code: response?.code ?? 'none', token: entry.token, durationMs };
  }

  #observationToCancel(endpoint: Endpoint, request: OperationRequest, path: string): ActiveObservation | undefined {
    if (request.token !== undefined) return this.#observations.byToken(endpoint.id, request.token);
    if (request.paths !== undefined) return this.#observations.get(endpoint.id, observationKey('/', request.paths));
    if (path !== '/') return this.#observations.get(endpoint.id, path);
    const composite = this.#observations.list(endpoint.id).filter((entry) => entry.paths !== undefined);
    if (composite.length > 1) throw invalid('the device has several composite observations: name the one to cancel by its paths or token');
    return composite[0];
  }

  /** A notification of an observation: `lwm2m-data` (operation `observe`) and the last-known values. */
  async #notified(endpoint: Endpoint, path: string, token: string, notification: CoapMessage, models: ReturnType<ObjectRegistry['lookupFor']>): Promise<void> {
    if (!isSuccess(notification.code)) return; // it ended the observation (onEnd)
    try {
      const { values, format } = this.#decodeValues(notification, path, models);
      await this.#emitValues(endpoint, path, token, values, { format: formatName(format) });
    } catch (error) {
      this.#logger.warn({ err: error, endpointId: endpoint.id, path }, 'LwM2M notification could not be handled');
    }
  }

  #decodeValues(response: CoapMessage, path: string, models: ReturnType<ObjectRegistry['lookupFor']>): { values: JsonRecord[]; format: number } {
    const format = contentFormat(response) ?? CONTENT_FORMATS.text;
    try {
      return { values: lwm2mRecordsToJson(decode(format, response.payload, { basePath: path, models })), format };
    } catch (error) {
      throw new AppError('IOTB_LWM2M_DEVICE_ERROR', undefined, { reason: error instanceof CodecError ? error.message : String(error), contentFormat: format });
    }
  }

  async #emitValues(endpoint: Endpoint, path: string, token: string, values: JsonRecord[], extra: Record<string, unknown>): Promise<void> {
    await this.#remember(endpoint, values);
    for (const listener of this.#valueListeners) listener(endpoint, values);
    await this.#presence.emit(endpoint, 'lwm2m-data', {
      operation: 'observe',
      path,
      objectIds: [...new Set(values.map((v) => parsePath(v.path).objectId))],
      token,
      ...extra,
      values,
      names: translatedNames(this.#objects.lookupFor(endpoint.accountId), values),
    });
  }
}


/** The `IOTB_LWM2M_*` error of a device's error answer. */
function deviceError(response: CoapMessage): AppError {
  return new AppError(ERROR_BY_CODE[response.code] ?? 'IOTB_LWM2M_DEVICE_ERROR', undefined, {
    coapCode: response.code,
    ...(response.payload.length > 0 ? { diagnostic: response.payload.toString('utf8').slice(0, 200) } : {}),
  });
}

/** One resource value (a resource instance, or a resource the model says is single) or several. */
function payloadKind(path: Lwm2mPath, models: ReturnType<ObjectRegistry['lookupFor']>): PayloadKind {
  if (path.resourceInstanceId !== undefined) return 'single';
  if (path.resourceId === undefined || path.objectId === undefined) return 'multiple';
  return models.resource(path.objectId, path.resourceId)?.multiple === false ? 'single' : 'multiple';
}
