import type { Domain } from '../domain/domain.js';
import type { Files } from '../domain/files.js';
import { pageRequest, type Page } from '../domain/pagination.js';
import type { Scope } from '../domain/scope.js';
import { AppError } from '../errors.js';
import type { Event } from '../events/event.js';
import { TemplateCatalogue } from './catalogue.js';
import { Installer } from './installer.js';
import type { HistoryEntry, Installation, SolutionStore } from './model.js';
import { OnceEvents } from './once-events.js';

export interface SolutionsDeps {
  readonly store: SolutionStore;
  readonly files: Files;
  /** The whole domain, for the Importer; read when an install runs (the domain is being built when this is). */
  readonly domain: () => Domain;
  readonly publish: (event: Event) => Promise<void>;
  readonly published: (accountId: string, eventId: string) => Promise<boolean>;
  readonly onFailure: (error: unknown) => void;
}

type Paging = { limit?: number | undefined; offset?: number | undefined };

/** Solution templates (docs/templates.md): the catalogue, installs into accounts, their history, and once-events. */
export class Solutions {
  readonly templates: TemplateCatalogue;
  readonly installer: Installer;
  readonly onceEvents: OnceEvents;
  readonly #store: SolutionStore;

  constructor(deps: SolutionsDeps) {
    this.#store = deps.store;
    this.templates = new TemplateCatalogue(deps.store, deps.files);
    this.onceEvents = new OnceEvents({ store: deps.store, publish: deps.publish, published: deps.published, onFailure: deps.onFailure });
    this.installer = new Installer({ domain: deps.domain, store: deps.store, catalogue: this.templates, onceEvents: this.onceEvents });
  }

  installations(scope: Scope, paging: Paging): Promise<Page<Installation>> {
    return this.#store.listInstallations(scope.accountId, pageRequest(paging.limit, paging.offset));
  }

  async installation(scope: Scope, id: string): Promise<Installation> {
    const found = await this.#store.getInstallation(scope.accountId, id);
    if (!found) throw new AppError('IOTB_TEMPLATE_INSTALLATION_NOT_FOUND');
    return found;
  }

  /** The acting account's installs, upgrades and uninstalls, newest first. */
  history(scope: Scope, paging: Paging): Promise<Page<HistoryEntry>> {
    return this.#store.history(scope.accountId, pageRequest(paging.limit, paging.offset));
  }

  /** Publishes once-events whose process died between claiming and publishing them (now, then every lease). */
  start(): void {
    this.onceEvents.start();
  }

  stop(): Promise<void> {
    return this.onceEvents.stop();
  }
}
