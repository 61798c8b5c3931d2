import type { InternalCalls } from '../../api/internal-calls.js';
import type { DeviceChannels } from '../../devices/device-server.js';
import type { Domain } from '../../domain/domain.js';
import type { ScriptMetrics } from '../../observability/script-metrics.js';
import { AppError } from '../../errors.js';
import type { Execution } from '../executions.js';
import type { Scope } from '../../domain/scope.js';
import type { Event } from '../../events/event.js';
import type { Cache } from '../cache.js';
import type { Mailer } from '../mailer.js';
import type { ScriptQueueStore } from '../queues.js';
import type { Signals } from '../signals.js';
import type { Trigger } from '../triggers.js';

/** What a namespace function knows of the run that called it. It acts as the trigger's account, nothing more. */
export interface ScriptContext extends ScriptServices {
  readonly scope: Scope;
  readonly trigger: Trigger;
  readonly event: Event;
  readonly domain: Domain;
  /** What the run adds to its execution record (`trigger.addContext`, `trigger.addGroup`). */
  readonly record: { readonly context: Record<string, unknown>; readonly groups: string[] };
  /** The wall time a run may take: waits inside a run end before it. */
  readonly wallTimeoutMs: number;
  /** When the run started (epoch ms): with `wallTimeoutMs`, the deadline waits inside the run must keep. Absent: now. */
  readonly startedAtMs?: number;
  /** Runs another trigger now (exec.sync); `depth` counts nested exec.sync calls. */
  readonly runTrigger: (trigger: Trigger, event: Event, depth: number) => Promise<Execution>;
  readonly depth: number;
}

/** The services scripts' namespaces use, besides the domain. */
export interface ScriptServices {
  readonly cache: Cache;
  readonly signals: Signals;
  readonly queues: ScriptQueueStore;
  /** The service's own HTTP API, called in-process (the `api` namespace). */
  readonly api: InternalCalls;
  readonly mailer: Mailer;
  /** The device servers' script-facing APIs (`mqtt`, `udp`, …); absent when that server is not running. */
  readonly devices: DeviceChannels;
  /** The `prometheus` namespace's metrics; absent unless `IOTBRIDGE_SCRIPT_METRICS=true`. */
  readonly scriptMetrics?: ScriptMetrics | undefined;
}

/** Runs in the service for a script: gets the script's arguments (JSON values), returns a JSON value; a throw becomes an Error in the script. */
export type HostFunction = (context: ScriptContext, args: unknown[]) => unknown;

/** One script namespace: `endpoint`, `cache`, … Each is one module registered with the engine. */
export interface Namespace {
  readonly name: string;
  readonly functions: Readonly<Record<string, HostFunction>>;
}

/** Thrown for bad arguments; the script sees `<namespace>.<fn>: <message>`. */
export class ScriptArgumentError extends Error {}

export function stringArg(args: unknown[], index: number, name: string): string {
  const value = args[index];
  if (typeof value !== 'string' || value === '') throw new ScriptArgumentError(`${name} must be a non-empty string`);
  return value;
}

export function optionalString(args: unknown[], index: number, name: string): string | undefined {
  const value = args[index];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new ScriptArgumentError(`${name} must be a string`);
  return value;
}

export function objectArg(args: unknown[], index: number, name: string): Record<string, unknown> {
  const value = args[index] ?? {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ScriptArgumentError(`${name} must be an object`);
  return value as Record<string, unknown>;
}

export function numberArg(args: unknown[], index: number, name: string, fallback?: number): number {
  const value = args[index] ?? fallback;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new ScriptArgumentError(`${name} must be a number`);
  return value;
}

/** An optional string property of an options object. */
export function stringField(object: Record<string, unknown>, name: string): string | undefined {
  const value = object[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new ScriptArgumentError(`${name} must be a string`);
  return value;
}

/** An optional property that is a string or an array of strings. */
export function stringListField(object: Record<string, unknown>, name: string): string[] | undefined {
  const value = object[name];
  if (value === undefined || value === null) return undefined;
  const list = Array.isArray(value) ? (value as unknown[]) : [value];
  if (!list.every((item) => typeof item === 'string')) throw new ScriptArgumentError(`${name} must be a string or an array of strings`);
  return list;
}

/** The endpoint a script names (id or `k.<key>`), or the event's own endpoint when it names none. */
export function endpointRef(context: ScriptContext, value: unknown): string {
  if (value === undefined || value === null) {
    if (!context.event.endpointId) throw new ScriptArgumentError('the event has no endpoint; name one (id or "k.<key>")');
    return context.event.endpointId;
  }
  if (typeof value !== 'string' || value === '') throw new ScriptArgumentError('an endpoint is named by its id or "k.<key>"');
  return value;
}

const PAYLOAD_ENCODINGS = ['hex', 'base64', 'utf8'] as const;

/**
 * A payload a script sends to a device: a string in `options.encoding` (`hex` by default, as event
 * payloads are; `base64`; `utf8` for text), or an array of byte values.
 */
export function payloadArg(args: unknown[], index: number, options: Record<string, unknown>): Buffer {
  const value = args[index];
  if (Array.isArray(value)) {
    if (!value.every((b) => Number.isInteger(b) && (b as number) >= 0 && (b as number) <= 255)) throw new ScriptArgumentError('payload bytes are integers 0..255');
    return Buffer.from(value as number[]);
  }
  if (typeof value !== 'string') throw new ScriptArgumentError('payload must be a string or an array of bytes');
  const encoding = stringField(options, 'encoding') ?? 'hex';
  if (!(PAYLOAD_ENCODINGS as readonly string[]).includes(encoding)) throw new ScriptArgumentError(`encoding must be one of ${PAYLOAD_ENCODINGS.join(', ')}`);
  if (encoding === 'hex' && !/^([0-9a-fA-F]{2})*$/.test(value)) throw new ScriptArgumentError('payload is not hex; pass {encoding: "utf8"} to send text');
  if (encoding === 'base64' && !/^[A-Za-z0-9+/]*={0,2}$/.test(value)) throw new ScriptArgumentError('payload is not base64');
  return Buffer.from(value, encoding as BufferEncoding);
}

/** A device server's script-facing API; an Error the script sees when that server does not run in this process. */
export function deviceChannel<K extends keyof DeviceChannels>(context: ScriptContext, name: K): NonNullable<DeviceChannels[K]> {
  const channel = context.devices[name];
  if (!channel) throw new Error(`the ${name.toUpperCase()} device server is not running in this service process`);
  return channel;
}

/**
 * Runs a device function (`udp.*`, `tcp.*`, `coap.*`): its AppErrors reach the script as `IOTB_CODE: message`,
 * as `lwm2m.*`'s do, so a script can tell a send cap (`IOTB_DEVICE_SEND_RATE_LIMITED`) from a device never
 * heard from (`IOTB_DEVICE_ADDRESS_UNKNOWN`).
 */
export async function deviceCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof AppError) throw new Error(`${error.code}: ${error.message}`);
    throw error;
  }
}
