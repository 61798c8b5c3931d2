import type { Logger } from 'pino';
import { contentFormat, isSuccess, type CoapMessage, type Observation, type Peer } from '../coap/index.js';
import type { DevicePresence } from '../devices/presence.js';
import type { Endpoint } from '../domain/endpoints.js';
import { randomText } from '../domain/ids.js';
import { AppError } from '../errors.js';
import { CodecError, decode, formatName } from './codecs/index.js';
import { isFormatRefusal, MAX_FORMAT_ATTEMPTS } from './content-formats.js';
import { lwm2mRecordsToJson, translatedNames, type JsonRecord } from './json-values.js';
import type { LastKnownStore } from './last-known-store.js';
import { CONTENT_FORMATS, parsePath } from './model.js';
import type { ObservationStore, StoredObservation } from './observation-store.js';
import type { ObjectRegistry } from './objects/registry.js';
import { observationKey, ObservationTable, type ActiveObservation } from './observations.js';
import { deviceError, invalid, type OperationRequest, type OperationResult } from './operations.js';
import type { Registration } from './registration.js';
import type { Formats, RequestEncoding } from './request-encoding.js';
import type { Lwm2mServer } from './server.js';

/**
 * Information reporting (Core 6.4): the observations of registered devices, made, cancelled, kept across restarts
 * and taken up by the node a device's notifications reach; each notification becomes `lwm2m-data` and last-known
 * values, and is told to in-process value listeners.
 */
export class DeviceObservations {
  readonly #server: Pick<Lwm2mServer, 'registrationOf' | 'observe' | 'resumeObservation' | 'takeUpFor'>;
  readonly #presence: DevicePresence;
  readonly #objects: ObjectRegistry;
  readonly #logger: Logger;
  /** Last-known values per endpoint and path, kept across restarts. */
  readonly #lastKnown: LastKnownStore;
  readonly #encoding: RequestEncoding;
  /** Active observations per endpoint and path; they end with the device's registration (Core 6.4.1). */
  readonly #observations = new ObservationTable();
  /** Active observations as stored, for a restart. */
  readonly #observationStore: ObservationStore;
  /** Registrations taken up from the store whose observations are being resumed, by id. */
  readonly #adopting = new Map<string, Promise<unknown>>();
  /** In-process listeners to every value a device notified or answered to an observe (FOTA follows /5/0/3 with it). */
  readonly #valueListeners: ((endpoint: Endpoint, values: readonly JsonRecord[]) => void)[] = [];

  constructor(deps: {
    server: Pick<Lwm2mServer, 'registrationOf' | 'observe' | 'resumeObservation' | 'takeUpFor'>;
    presence: DevicePresence;
    objects: ObjectRegistry;
    logger: Logger;
    lastKnown: LastKnownStore;
    observations: ObservationStore;
    encoding: RequestEncoding;
  }) {
    this.#server = deps.server;
    this.#presence = deps.presence;
    this.#objects = deps.objects;
    this.#logger = deps.logger;
    this.#lastKnown = deps.lastKnown;
    this.#observationStore = deps.observations;
    this.#encoding = deps.encoding;
  }

  /** Calls `listener` with the values of every notification and first observe answer, after they are remembered. */
  onValues(listener: (endpoint: Endpoint, values: readonly JsonRecord[]) => void): void {
    this.#valueListeners.push(listener);
  }

  /** The endpoint's active observations (path, token, since). */
  list(endpoint: Endpoint): { path: string; paths?: string[]; token: string; since: string }[] {
    return this.#observations.list(endpoint.id).map(({ path, paths, token, since }) => ({ path, ...(paths && { paths: [...paths] }), token, since }));
  }

  /** Another node registered or took up the device: its observations are that node's now (memory only). */
  release(endpointId: string): void {
    this.#observations.dropEndpoint(endpointId);
  }

  /** The device's registration ended: its observations with it, in memory and in the store. */
  registrationEnded(endpointId: string): void {
    if (this.#observations.dropEndpoint(endpointId).length === 0) return;
    this.#observationStore.removeEndpoint(endpointId).catch((error: unknown) => this.#logger.warn({ err: error, endpointId }, 'could not forget stored LwM2M observations'));
  }

  /** A registration another node made: its observations go on here, once `heldTakenUp` (its held requests) is done. */
  adopted(registration: Registration, heldTakenUp: Promise<unknown>): void {
    const resuming = heldTakenUp
      .then(() => this.#observationStore.ofRegistration(registration.id))
      .then((stored) => this.resume(stored))
      .catch((error: unknown) => this.#logger.warn({ err: error, registrationId: registration.id }, 'could not take up stored LwM2M observations'))
      .finally(() => this.#adopting.delete(registration.id));
    this.#adopting.set(registration.id, resuming);
  }

  /** A notification for an observation another node made: its registration and observations go on here. */
  async takeUpStray(token: string, peer: Peer): Promise<boolean> {
    if (!/^[0-9a-f]{2,16}$/.test(token)) return false;
    const stored = await this.#observationStore.get(token);
    const registration = stored && (await this.#server.takeUpFor(stored.registrationId, peer));
    if (!stored || !registration) return false;
    await this.#adopting.get(registration.id);
    if (!this.#observations.list(stored.endpointId).some((entry) => entry.token === token)) await this.#resume(stored);
    return this.#observations.list(stored.endpointId).some((entry) => entry.token === token);
  }

  /**
   * Observe (Core 6.4.1, RFC 7641): GET with Observe: 0. The first answer is returned like a read (and
   * emitted as `lwm2m-data`); every notification becomes `lwm2m-data` with the observation's token.
   */
  async observe(endpoint: Endpoint, registration: Registration, request: OperationRequest, path: string, formats: Formats, models: ReturnType<ObjectRegistry['lookupFor']>): Promise<OperationResult> {
    const handlers = this.#observationHandlers(endpoint, path, models);
    const started = performance.now();
    const attempt = async (format: number): Promise<Observation> => {
      const coapRequest = this.#encoding.build(request, parsePath(path), registration, models, format);
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
    if (isSuccess(observation.response.code)) this.#encoding.worked(endpoint, formats, used);
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
  async resume(stored: readonly StoredObservation[]): Promise<number> {
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
    const coapRequest = this.#encoding.build(request, parsePath(stored.path), registration, models, stored.format);
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
  async cancel(endpoint: Endpoint, request: OperationRequest, path: string): Promise<OperationResult> {
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
    await this.#lastKnown.put(endpoint.id, values);
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
