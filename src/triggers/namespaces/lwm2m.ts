import type { Endpoint } from '../../domain/endpoints.js';
import { AppError } from '../../errors.js';
import { MAX_HOLD_MS, PROXY_SEND_TTL_MS } from '../../lwm2m/held-requests.js';
import type { FotaInput } from '../../lwm2m/fota/fota-channel.js';
import type { Lwm2mOperation, OperationRequest, OperationResult } from '../../lwm2m/operations.js';
import { deviceChannel, endpointRef, objectArg, ScriptArgumentError, stringArg, stringField, type Namespace, type ScriptContext } from './namespace.js';

/** What is kept back from the run's wall time for the script to go on after a device timed out. */
const WALL_MARGIN_MS = 250;
const MIN_TIMEOUT_MS = 100;
const DEFAULT_TIMEOUT_MS = 30_000;
/** What lwm2m.proxy_send may hold (observations answer their caller, who must wait). */
const HELD_OPERATIONS = new Set(['read', 'write', 'exec', 'create', 'delete', 'discover', 'writeAttributes', 'readComposite', 'writeMulti']);

/**
 * `lwm2m.*`: device management of the account's LwM2M devices from scripts (docs/scripting.md). An endpoint
 * argument is an id or `"k.<key>"` (`null`: the event's endpoint), looked up in the trigger's account only.
 * Each function answers what `POST /endpoints/{ref}/lwm2m/{operation}` answers; a failure (the device's
 * error, a timeout, no registration, a bad argument) is an Error in the script with the `IOTB_*` code first.
 */
export const lwm2mNamespace: Namespace = {
  name: 'lwm2m',
  functions: {
    /** lwm2m.read(endpoint, path, {format, timeout}?) → {code, values: [{path, type, value, time?}], token, …}; emits lwm2m-data. */
    read: (context, args) => {
      const options = objectArg(args, 2, 'options');
      return perform(context, args[0], { operation: 'read', path: stringArg(args, 1, 'path'), format: stringField(options, 'format') }, options);
    },
    /** lwm2m.write(endpoint, path, value, {format, partial, timeout}?) → {code, …}: replace (PUT), or partial update (POST). */
    write: (context, args) => {
      const options = objectArg(args, 3, 'options');
      if (args[2] === undefined || args[2] === null) throw new ScriptArgumentError('value is missing');
      return perform(context, args[0], { operation: 'write', path: stringArg(args, 1, 'path'), value: args[2], format: stringField(options, 'format'), partial: booleanField(options, 'partial') }, options);
    },
    /**
     * lwm2m.writeMulti(endpoint, {"/3/0/14": "+02:00", "/3/0/15": "Europe/Paris"}, {format, partial, timeout}?)
     * writes several resources of one object instance in one request; a partial update unless `partial: false`.
     */
    writeMulti: (context, args) => {
      const values = objectArg(args, 1, 'values');
      const options = objectArg(args, 2, 'options');
      const paths = Object.keys(values);
      if (paths.length === 0) throw new ScriptArgumentError('values must name at least one resource, e.g. {"/3/0/14": "+02:00"}');
      const instances = new Set(paths.map((path) => /^\/\d+\/\d+(?=\/\d)/.exec(path)?.[0]));
      const [instance] = instances;
      if (instances.size !== 1 || instance === undefined) throw new ScriptArgumentError('values are resources of one object instance, by absolute path: {"/3/0/14": …, "/3/0/15": …}');
      return perform(context, args[0], { operation: 'write', path: instance, values, format: stringField(options, 'format'), partial: booleanField(options, 'partial') ?? true }, options);
    },
    /** lwm2m.exec(endpoint, path, {timeout}?) executes a resource → {code, …}. */
    exec: (context, args) => perform(context, args[0], { operation: 'exec', path: stringArg(args, 1, 'path') }, objectArg(args, 2, 'options')),
    /** lwm2m.execWithArgs(endpoint, path, args, {timeout}?): args as the Core 5.4.5 string `0='v',1`, or {0: 'v', 1: null}. */
    execWithArgs: (context, args) =>
      perform(context, args[0], { operation: 'exec', path: stringArg(args, 1, 'path'), args: execArguments(args[2]) }, objectArg(args, 3, 'options')),
    /** lwm2m.create(endpoint, "/3303", {"/3303/1/5700": 18.5}, {format, timeout}?) → {code, location: "/3303/1", …}. */
    create: (context, args) => {
      const options = objectArg(args, 3, 'options');
      return perform(context, args[0], { operation: 'create', path: stringArg(args, 1, 'objectPath'), values: objectArg(args, 2, 'values'), format: stringField(options, 'format') }, options);
    },
    /** lwm2m.delete(endpoint, "/3303/1", {timeout}?) deletes an object instance → {code, …}. */
    delete: (context, args) => perform(context, args[0], { operation: 'delete', path: stringArg(args, 1, 'path') }, objectArg(args, 2, 'options')),
    /**
     * lwm2m.proxy_send(endpoint, {operation, path, value?, values?, format?, partial?, args?, attributes?}, {context, ttl, timeout}?)
     * holds the request until the device can take it, through re-registrations and restarts, for `ttl` ms
     * (default 14 days) → {id, queued}. Each outcome (delivered, failed, expired, cancelled) is an lwm2m-result
     * event of the endpoint with `context` and `id`; the script does not wait for the device.
     */
    proxy_send: async (context, args) => {
      const request = objectArg(args, 1, 'request');
      const options = objectArg(args, 2, 'options');
      const operation = stringField(request, 'operation');
      if (operation === undefined || !HELD_OPERATIONS.has(operation)) throw new ScriptArgumentError(`request.operation must be one of ${[...HELD_OPERATIONS].join(', ')}`);
      const ttl = options.ttl;
      if (ttl !== undefined && ttl !== null && (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 1000 || ttl > MAX_HOLD_MS)) {
        throw new ScriptArgumentError(`ttl is milliseconds, 1000 to ${MAX_HOLD_MS}`);
      }
      const timeout = options.timeout;
      if (timeout !== undefined && timeout !== null && (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout < MIN_TIMEOUT_MS || timeout > 300_000)) {
        throw new ScriptArgumentError(`timeout is milliseconds, ${MIN_TIMEOUT_MS} to 300000`);
      }
      const values = request.values === undefined || request.values === null ? undefined : objectArg([request.values], 0, 'request.values');
      const attributes = request.attributes === undefined || request.attributes === null ? undefined : (objectArg([request.attributes], 0, 'request.attributes') as Record<string, string | number>);
      const endpoint = await resolve(context, args[0]);
      try {
        return await deviceChannel(context, 'lwm2m').hold(
          endpoint,
          {
            operation: operation as Lwm2mOperation,
            path: stringField(request, 'path') ?? '/',
            paths: stringList(request.paths, 'request.paths'),
            value: request.value,
            values,
            format: stringField(request, 'format'),
            partial: booleanField(request, 'partial'),
            args: request.args === undefined || request.args === null ? undefined : execArguments(request.args),
            attributes,
            timeoutMs: typeof timeout === 'number' ? Math.floor(timeout) : DEFAULT_TIMEOUT_MS,
          },
          { context: options.context ?? null, kind: 'proxy', ttlMs: typeof ttl === 'number' ? ttl : PROXY_SEND_TTL_MS },
        );
      } catch (error) {
        throw scriptError(error);
      }
    },
    /**
     * lwm2m.firmwareUpdate(endpoint, fileName, {mode, appendFileName, includePortInUrl, protocol, timeout}?) starts
     * a FOTA of the endpoint with a repository file (as POST /endpoints/{ref}/fota; `timeout` in seconds per step)
     * → the job ({id, state, counts, …}). It ends in an lwm2m-fota-complete event of the endpoint (docs/fota.md).
     */
    firmwareUpdate: async (context, args) => {
      const options = objectArg(args, 2, 'options');
      const mode = stringField(options, 'mode');
      if (mode !== undefined && mode !== 'push' && mode !== 'pull' && mode !== 'auto') throw new ScriptArgumentError('mode is push, pull or auto');
      const protocol = stringField(options, 'protocol');
      if (protocol !== undefined && protocol !== 'coap' && protocol !== 'coaps' && protocol !== 'http') throw new ScriptArgumentError('protocol is coap, coaps or http');
      const timeout = options.timeout;
      if (timeout !== undefined && timeout !== null && typeof timeout !== 'number') throw new ScriptArgumentError('timeout is seconds per step');
      const input: FotaInput = {
        file: stringArg(args, 1, 'fileName'),
        mode,
        protocol,
        appendFileName: booleanField(options, 'appendFileName'),
        includePortInUrl: booleanField(options, 'includePortInUrl'),
        timeout: timeout ?? undefined,
      };
      const fota = deviceChannel(context, 'fota');
      try {
        return await fota.createFor(context.scope, endpointRef(context, args[0]), input);
      } catch (error) {
        throw scriptError(error);
      }
    },
    /** lwm2m.lastKnown(endpoint, path?) → the last values read or notified at or under `path` ([{path, type, value, time?}]), or null when none. */
    lastKnown: async (context, args) => {
      const path = args[1] === undefined || args[1] === null ? undefined : stringArg(args, 1, 'path').replace(/\/$/, '');
      const endpoint = await resolve(context, args[0]);
      const values = (await deviceChannel(context, 'lwm2m').lastKnown(endpoint)).filter((v) => path === undefined || path === '' || v.path === path || v.path.startsWith(`${path}/`));
      return values.length > 0 ? values : null;
    },
  },
};

async function perform(context: ScriptContext, ref: unknown, request: Omit<OperationRequest, 'timeoutMs'>, options: Record<string, unknown>): Promise<OperationResult> {
  const management = deviceChannel(context, 'lwm2m');
  const timeoutMs = timeoutWithinWallTime(context, options.timeout);
  const endpoint = await resolve(context, ref);
  try {
    return await management.perform(endpoint, { ...request, timeoutMs });
  } catch (error) {
    throw scriptError(error);
  }
}

/** The endpoint in the trigger's own account (404 for another account's, as for an unknown one). */
async function resolve(context: ScriptContext, ref: unknown): Promise<Endpoint> {
  try {
    return await context.domain.endpoints.get(context.scope, endpointRef(context, ref));
  } catch (error) {
    throw scriptError(error);
  }
}

/** The request's timeout: `options.timeout` (default 30 s), never past the run's wall time. */
function timeoutWithinWallTime(context: ScriptContext, value: unknown): number {
  if (value !== undefined && value !== null && (typeof value !== 'number' || !Number.isFinite(value) || value < MIN_TIMEOUT_MS)) {
    throw new ScriptArgumentError(`timeout is milliseconds, at least ${MIN_TIMEOUT_MS}`);
  }
  const elapsed = Date.now() - (context.startedAtMs ?? Date.now());
  const left = context.wallTimeoutMs - elapsed - WALL_MARGIN_MS;
  if (left < MIN_TIMEOUT_MS) throw new Error('IOTB_LWM2M_TIMEOUT: the run has too little wall time left to wait for the device');
  return Math.floor(Math.min(typeof value === 'number' ? value : DEFAULT_TIMEOUT_MS, left));
}

/** An Error the script sees: `IOTB_CODE: message (CoAP 4.04)`. */
function scriptError(error: unknown): Error {
  if (error instanceof ScriptArgumentError || !(error instanceof AppError)) return error instanceof Error ? error : new Error(String(error));
  const details = (error.details ?? {}) as Record<string, unknown>;
  const coap = typeof details.coapCode === 'string' && !error.message.includes(`CoAP ${details.coapCode}`) ? `CoAP ${details.coapCode}` : undefined;
  const extra = [coap, typeof details.diagnostic === 'string' ? details.diagnostic : undefined].filter(Boolean);
  return new Error(`${error.code}: ${error.message}${extra.length > 0 ? ` (${extra.join(': ')})` : ''}`);
}

function booleanField(object: Record<string, unknown>, name: string): boolean | undefined {
  const value = object[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw new ScriptArgumentError(`${name} must be true or false`);
  return value;
}

/** Execute arguments (Core 5.4.5): a string as given, or {0: 'v', 1: null} → `0='v',1`. */
function execArguments(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ScriptArgumentError("args is a string like 0='v',1 or an object like {0: 'v', 1: null}");
  return Object.entries(value as Record<string, unknown>)
    .map(([digit, argument]) => {
      if (!/^\d$/.test(digit)) throw new ScriptArgumentError('argument names are single digits 0-9');
      if (argument === null || argument === undefined) return digit;
      if (typeof argument !== 'string' && typeof argument !== 'number') throw new ScriptArgumentError('argument values are strings or numbers');
      const text = String(argument);
      if (text.includes("'")) throw new ScriptArgumentError('argument values cannot contain a quote');
      return `${digit}='${text}'`;
    })
    .join(',');
}

function stringList(value: unknown, name: string): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || value.length === 0 || value.length > 100 || value.some((item) => typeof item !== 'string')) throw new ScriptArgumentError(`${name} must be a list of 1 to 100 paths`);
  return value as string[];
}
