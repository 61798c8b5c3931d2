import { AppError } from '../errors.js';
import { newId } from '../domain/ids.js';
import type { Page, PageRequest } from '../domain/pagination.js';
import type { Scope } from '../domain/scope.js';
import type { TriggerFilter } from './filters.js';

/** A global variable of a trigger: its value, and whether an import leaves the current value alone. */
export interface GlobalVariable {
  readonly value: unknown;
  readonly protected: boolean;
}

export interface Trigger {
  readonly id: string;
  readonly accountId: string;
  readonly name: string;
  /** Event types it runs on. */
  readonly events: string[];
  readonly filters: TriggerFilter[];
  readonly script: string;
  readonly enabled: boolean;
  /** A library trigger runs on no event; other triggers import its script. */
  readonly library: boolean;
  readonly globals: Record<string, GlobalVariable>;
  /** Form definition for the UI of a generic trigger; opaque to the service. */
  readonly form: unknown;
  /** Grows with every change; compiled scripts are cached per version. */
  readonly version: number;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export type TriggerInput = Pick<Trigger, 'name' | 'events' | 'script'> & Partial<Pick<Trigger, 'filters' | 'enabled' | 'library' | 'globals' | 'form'>>;

export interface TriggerStore {
  insert(trigger: Trigger): Promise<void>;
  get(accountId: string, id: string): Promise<Trigger | undefined>;
  findByName(accountId: string, name: string): Promise<Trigger | undefined>;
  list(accountId: string, page: PageRequest): Promise<Page<Trigger>>;
  /** Enabled, non-library triggers of the account: what the engine runs. */
  active(accountId: string): Promise<Trigger[]>;
  update(trigger: Trigger): Promise<void>;
  delete(id: string): Promise<void>;
}

/** Listeners told when an account's triggers change here or (`elsewhere`) on another node, so caches (the engine's) stay true. */
export type TriggerChangeListener = (accountId: string, elsewhere: boolean) => void;

const GLOBAL_NAME = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const RESERVED = new Set(['event', 'log', 'console', 'trigger', 'globalThis']);

export class Triggers {
  readonly #store: TriggerStore;
  readonly #listeners: TriggerChangeListener[] = [];

  constructor(store: TriggerStore) {
    this.#store = store;
  }

  onChange(listener: TriggerChangeListener): void {
    this.#listeners.push(listener);
  }

  async create(scope: Scope, input: TriggerInput): Promise<Trigger> {
    const now = new Date().toISOString();
    const trigger: Trigger = { id: newId(), accountId: scope.accountId, version: 1, createdAt: now, updatedAt: now, ...normaliseTrigger(input) };
    await this.#store.insert(trigger);
    this.#changed(scope.accountId);
    return trigger;
  }

  list(scope: Scope, page: PageRequest): Promise<Page<Trigger>> {
    return this.#store.list(scope.accountId, page);
  }

  async get(scope: Scope, id: string): Promise<Trigger> {
    const trigger = await this.#store.get(scope.accountId, id);
    if (!trigger) throw new AppError('IOTB_TRIGGER_NOT_FOUND');
    return trigger;
  }

  async replace(scope: Scope, id: string, input: TriggerInput): Promise<Trigger> {
    const current = await this.get(scope, id);
    const trigger: Trigger = { ...current, ...normaliseTrigger(input), version: current.version + 1, updatedAt: new Date().toISOString() };
    await this.#store.update(trigger);
    this.#changed(scope.accountId);
    return trigger;
  }

  async delete(scope: Scope, id: string): Promise<void> {
    await this.get(scope, id);
    await this.#store.delete(id);
    this.#changed(scope.accountId);
  }

  /** A trigger of the acting account by id, or else by exact name; 404 when neither matches. */
  async find(scope: Scope, idOrName: string): Promise<Trigger> {
    const byId = await this.#store.get(scope.accountId, idOrName);
    if (byId) return byId;
    const byName = await this.#store.findByName(scope.accountId, idOrName);
    if (!byName) throw new AppError('IOTB_TRIGGER_NOT_FOUND', `No trigger with the id or name "${idOrName}"`);
    return byName;
  }

  active(accountId: string): Promise<Trigger[]> {
    return this.#store.active(accountId);
  }

  /** Another node of a cluster changed the account's triggers (docs/cluster.md). */
  changedElsewhere(accountId: string): void {
    for (const listener of this.#listeners) listener(accountId, true);
  }

  #changed(accountId: string): void {
    for (const listener of this.#listeners) listener(accountId, false);
  }
}

/** A trigger definition as it is saved (and test-run as a draft): global variable names checked, defaults filled. */
export function normaliseTrigger(input: TriggerInput): Omit<Trigger, 'id' | 'accountId' | 'version' | 'createdAt' | 'updatedAt'> {
  const globals = input.globals ?? {};
  const bad = Object.keys(globals).filter((name) => !GLOBAL_NAME.test(name) || RESERVED.has(name));
  if (bad.length > 0) throw new AppError('IOTB_REQUEST_VALIDATION', 'Global variable names must be JavaScript identifiers other than event, log, console, trigger', { globals: bad });
  return {
    name: input.name,
    events: [...new Set(input.events)],
    filters: input.filters ?? [],
    script: input.script,
    enabled: input.enabled ?? true,
    library: input.library ?? false,
    globals,
    form: input.form ?? null,
  };
}
