import { lruCache } from '../lru.js';
import type { Logger } from 'pino';
import type { Domain } from '../domain/domain.js';
import type { Endpoint } from '../domain/endpoints.js';
import { newSortableId } from '../domain/ids.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../domain/json-depth.js';
import { isoTime } from '../domain/time.js';
import type { Event } from '../events/event.js';
import { eventJsonOf } from '../events/event-json.js';
import type { EventBus } from '../events/event-bus.js';

import type { Execution } from './executions.js';
import { matches, needsEndpoint } from './filters.js';
import type { RunResult } from './sandbox/protocol.js';
import { RunSequence, type ScriptRun, type ScriptRunner } from './sandbox/worker-pool.js';
import { ScriptArgumentError, type HostFunction, type Namespace, type ScriptContext, type ScriptServices } from './namespaces/namespace.js';
import type { Trigger } from './triggers.js';


/** What the engine asks per account before it runs triggers for an event, and tells after each run (src/admin/). */
export interface AccountGate {
  triggersRun(accountId: string): boolean;
  scriptRan(accountId: string, durationMs: number): void;
}

/**
 * Reacts to events: finds the account's enabled triggers listening to the event's type whose filters
 * hold, runs each in the sandbox, and records the execution. Nothing calls a trigger but this engine.
 */
export class TriggerEngine {
  readonly #domain: Domain;
  readonly #runner: ScriptRunner;
  readonly #services: ScriptServices;
  readonly #wallTimeoutMs: number;
  readonly #logger: Logger;
  /** False while triggers must not run (an expired licence): events are then handled without runs, never run later. */
  readonly #runs: () => boolean;
  /** Per account: whether its triggers run now (a suspension, a script time budget), and what each run took. */
  readonly #accounts: AccountGate | undefined;
  /** `{ namespace: [function names] }` for the sandbox, and the functions by `namespace.fn`. */
  readonly #names: Record<string, string[]> = { trigger: [] };
  readonly #functions = new Map<string, HostFunction>();
  /** Active triggers per account (held resolved once loaded); dropped when the account's triggers change. */
  readonly #active = lruCache<string, readonly Trigger[] | Promise<readonly Trigger[]>>(10_000);
  /** The last execution write whose failure is being watched for. */
  #watched: Promise<void> | undefined;

  /** The namespaces scripts can call (`GET /triggers/namespaces` lists them). */
  readonly namespaces: readonly Namespace[];

  constructor(deps: { domain: Domain; runner: ScriptRunner; services: ScriptServices; namespaces: readonly Namespace[]; wallTimeoutMs: number; logger: Logger; runs?: () => boolean; accounts?: AccountGate }) {
    this.#domain = deps.domain;
    this.#runner = deps.runner;
    this.#services = deps.services;
    this.#wallTimeoutMs = deps.wallTimeoutMs;
    this.#logger = deps.logger;
    this.#runs = deps.runs ?? (() => true);
    this.#accounts = deps.accounts;
    this.namespaces = deps.namespaces;
    for (const namespace of deps.namespaces) {
      this.#names[namespace.name] = [...(this.#names[namespace.name] ?? []), ...Object.keys(namespace.functions)];
      for (const [fn, host] of Object.entries(namespace.functions)) this.#functions.set(`${namespace.name}.${fn}`, host);
    }
    this.#domain.triggers.onChange((accountId) => this.#active.delete(accountId));
  }

  /**
   * Runs a script of an account that is not a trigger (a UDP service's key script) in the account's
   * sandbox, with the namespaces triggers see (so it shares their isolates); `host` answers its calls.
   */
  runScript(run: Omit<ScriptRun, 'namespaces'>): Promise<RunResult> {
    return this.#runner.run({ ...run, namespaces: this.#names });
  }

  attach(bus: EventBus): void {
    bus.subscribeBatches((events) => this.handleInOrder(events));
  }

  /**
   * Runs every matching trigger for one event, one after another. Most events meet one trigger whose filters
   * need no look-up: its run is then the whole of the handling.
   */
  handle(event: Event): Promise<unknown> {
    const triggers = this.#toRun(event);
    if (triggers instanceof Promise) return triggers.then((loaded) => this.#runEach(loaded, event));
    return this.#runEach(triggers, event);
  }

  /**
   * Runs the matching triggers of events of one partition (an endpoint's), event after event, each run once the
   * one before has ended, as `handle` one by one would. The runs are handed to the runner as they are found, in
   * one sequence that keeps their order where they run: a busy endpoint's runs then do not wait for a trip back
   * here between them. What fails for one event is logged, and the others go on.
   */
  async handleInOrder(events: readonly Event[]): Promise<void> {
    if (events.length === 1) {
      await this.handle(events[0]!).catch((error: unknown) => this.#failed(error, events[0]!));
      return;
    }
    const sequence = new RunSequence();
    const runs: Promise<unknown>[] = [];
    for (const event of events) {
      try {
        let triggers = this.#toRun(event);
        if (triggers instanceof Promise) triggers = await triggers;
        for (const trigger of triggers) runs.push(this.run(trigger, event, false, 0, sequence).catch((error: unknown) => this.#failed(error, event)));
      } catch (error) {
        this.#failed(error, event);
      }
    }
    await Promise.all(runs);
  }

  #failed(error: unknown, event: Event): void {
    this.#logger.error({ err: error, eventId: event.id }, 'could not run the triggers of an event');
  }

  /** The triggers to run for an event, in order: the account's active ones listening to it whose filters hold. */
  #toRun(event: Event): readonly Trigger[] | Promise<readonly Trigger[]> {
    if (!this.#runs()) return NONE;
    // Like the licence: the event is stored and handled, its triggers skipped (never run later).
    if (this.#accounts && !this.#accounts.triggersRun(event.accountId)) return NONE;
    const active = this.#activeOf(event.accountId);
    return active instanceof Promise ? active.then((loaded) => this.#matching(loaded, event)) : this.#matching(active, event);
  }

  #matching(active: readonly Trigger[], event: Event): readonly Trigger[] | Promise<readonly Trigger[]> {
    let listening = listeningTo(active, event.type);
    // exec.now: the output event names the trigger to run; exec.sync output events ran already.
    const target = event.type === 'output' ? outputTarget(event) : undefined;
    if (target?.sync) return NONE;
    if (target) {
      const named = active.find((trigger) => trigger.id === target.trigger);
      if (named && !listening.includes(named)) listening = [...listening, named];
    }
    // A template's once-event is meant for one trigger (docs/templates.md): the others listening to the type skip it.
    const targeted = event.type === 'once-event' ? targetedTrigger(event) : undefined;
    if (targeted !== undefined) listening = listening.filter((trigger) => trigger.id === targeted);
    if (listening.length === 0) return NONE;
    if (!(event.endpointId && listening.some((t) => needsEndpoint(t.filters)))) return filtered(listening, event, undefined);
    return this.#endpointOf(event).then((endpoint) => filtered(listening, event, endpoint));
  }

  /** One after another; most events meet one trigger, whose run is then the whole of the handling. */
  #runEach(triggers: readonly Trigger[], event: Event): Promise<unknown> {
    if (triggers.length === 0) return DONE;
    if (triggers.length === 1) return this.run(triggers[0]!, event, false);
    const sequence = new RunSequence();
    return Promise.all(triggers.map((trigger) => this.run(trigger, event, false, 0, sequence)));
  }

  #activeOf(accountId: string): readonly Trigger[] | Promise<readonly Trigger[]> {
    const cached = this.#active.get(accountId);
    if (cached) return cached;
    const loading = this.#domain.triggers.active(accountId).then((loaded) => {
      // Unless the account's triggers changed meanwhile (the entry is gone then).
      if (this.#active.get(accountId) === loading) this.#active.set(accountId, loaded);
      return loaded;
    });
    loading.catch(() => {
      if (this.#active.get(accountId) === loading) this.#active.delete(accountId);
    });
    this.#active.set(accountId, loading);
    return loading;
  }

  /**
   * Runs one trigger on one event and records the execution (also used for test runs). With a sequence, the
   * run starts once the sequence's run before it has ended; it is handed to the runner before this returns.
   */
  async run(trigger: Trigger, event: Event, test: boolean, depth = 0, sequence?: RunSequence): Promise<Execution> {
    const startedAtMs = Date.now();
    // What namespace functions see of the run and add to its record; most runs call none, so it is made at the first call.
    let context: Promise<ScriptContext> | undefined;
    let record: ScriptContext['record'] | undefined;
    const contextOf = async (): Promise<ScriptContext> => ({
      scope: await this.#domain.accounts.platformScope(trigger.accountId, `trigger:${trigger.id}`),
      trigger,
      event,
      domain: this.#domain,
      ...this.#services,
      record: (record = { context: {}, groups: [] }),
      wallTimeoutMs: this.#wallTimeoutMs,
      startedAtMs,
      runTrigger: (target, targetEvent, targetDepth) => this.run(target, targetEvent, false, targetDepth),
      depth,
    });
    const script = scriptOf(trigger);
    const result = await this.#runner.run({
      accountId: trigger.accountId,
      scriptId: script.scriptId,
      scriptName: script.scriptName,
      script: trigger.script,
      event,
      eventJson: eventJsonOf(event),
      globals: script.globals,
      namespaces: this.#names,
      sequence,
      host: async (namespace, fn, args) => {
        const host = this.#functions.get(`${namespace}.${fn}`);
        if (!host) throw new Error('no such function');
        if (nestsDeeperThan(args, MAX_JSON_DEPTH + 1)) throw new ScriptArgumentError(`arguments nest deeper than ${MAX_JSON_DEPTH} levels`);
        return host(await (context ??= contextOf()), args);
      },
    });
    this.#accounts?.scriptRan(trigger.accountId, result.durationMs);
    const execution: Execution = {
      id: newSortableId(),
      accountId: trigger.accountId,
      triggerId: trigger.id,
      eventId: event.id,
      eventType: event.type,
      startedAt: isoTime(startedAtMs),
      durationMs: Math.round(result.durationMs * 1000) / 1000,
      status: result.status,
      error: result.error,
      line: result.line,
      logs: result.logs,
      test,
      context: record?.context ?? {},
      groups: record?.groups ?? [],
    };
    const recorded = this.#domain.executions.record(execution);
    // Its lines and error in the account's log: buffered, written with other runs' in one statement.
    this.#domain.logs.scriptRun(execution, event);
    // The executions of one commit share its promise: its failure is logged once, not once per run.
    if (recorded !== this.#watched) {
      this.#watched = recorded;
      recorded.catch((error: unknown) => this.#logger.error({ err: error, triggerId: trigger.id }, 'could not record trigger executions'));
    }
    // An endpoint's next event need not wait for the record to be written (it is, within a tick);
    // a test run answers with the execution, so it waits.
    if (test) await recorded.catch(() => undefined);
    return execution;
  }

  /** Undefined when deleted since the event: tag and status-detail filters then see no endpoint. */
  #endpointOf(event: Event): Promise<Endpoint | undefined> {
    return this.#domain.endpoints.byId(event.accountId, event.endpointId!);
  }
}

const DONE: Promise<void> = Promise.resolve();
const NONE: readonly Trigger[] = [];

/** The triggers whose filters hold for the event (the endpoint's row when one needs it). */
function filtered(listening: readonly Trigger[], event: Event, endpoint: Endpoint | undefined): readonly Trigger[] {
  if (listening.length === 1) return matches(listening[0]!.filters, event, endpoint) ? listening : NONE;
  return listening.filter((trigger) => matches(trigger.filters, event, endpoint));
}

/** The triggers of an account's active list that listen to a type, found once per list and type. */
const byType = new WeakMap<readonly Trigger[], Map<string, readonly Trigger[]>>();
function listeningTo(active: readonly Trigger[], type: string): readonly Trigger[] {
  let types = byType.get(active);
  if (!types) byType.set(active, (types = new Map<string, readonly Trigger[]>()));
  let listening = types.get(type);
  if (!listening) {
    listening = active.filter((trigger) => trigger.events.includes(type));
    // Custom event types are unbounded: past a few hundred, the list is filtered per event again.
    if (types.size < 256) types.set(type, listening);
  }
  return listening;
}

/** What the sandbox is told of a trigger version besides its script, made once per trigger object (the active ones are cached). */
interface TriggerScript {
  readonly scriptId: string;
  readonly scriptName: string;
  /** The values of its global variables: one object for every run, so the runner serialises it once. */
  readonly globals: Readonly<Record<string, unknown>>;
}
const scripts = new WeakMap<Trigger, TriggerScript>();
function scriptOf(trigger: Trigger): TriggerScript {
  let script = scripts.get(trigger);
  if (!script) {
    const globals: Record<string, unknown> = {};
    for (const name in trigger.globals) globals[name] = trigger.globals[name]!.value;
    script = { scriptId: `${trigger.id}@${trigger.version}`, scriptName: `trigger:${trigger.name.replace(/[^\w.-]/g, '_')}.js`, globals };
    scripts.set(trigger, script);
  }
  return script;
}

function outputTarget(event: Event): { trigger: string; sync: boolean } | undefined {
  const data = event.data as { trigger?: unknown; sync?: unknown } | null;
  return typeof data?.trigger === 'string' ? { trigger: data.trigger, sync: data.sync === true } : undefined;
}

/** The trigger a once-event names in `data.triggerId`, if any. */
function targetedTrigger(event: Event): string | undefined {
  const data = event.data as { triggerId?: unknown } | null;
  return typeof data?.triggerId === 'string' ? data.triggerId : undefined;
}
