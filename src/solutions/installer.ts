import { isDeepStrictEqual } from 'node:util';
import type { Domain } from '../domain/domain.js';
import { newId } from '../domain/ids.js';
import type { Scope } from '../domain/scope.js';
import { isoTime } from '../domain/time.js';
import { AppError } from '../errors.js';
import type { Section } from '../imex/document.js';
import { Importer, type Refusal, type SectionReader } from '../imex/importer.js';
import { actorOf, compareVersions, type TemplateCatalogue } from './catalogue.js';
import { documentOf, itemsOf, readCurrent, refKey, removeItem, REMOVAL_ORDER, type DocumentItem } from './items.js';
import type { HistoryAction, HistoryEntry, Installation, ItemRef, Outcome, SnapshotItem, SolutionStore, Template, TemplateDocument } from './model.js';
import type { OnceEvents } from './once-events.js';
import { resolveValues, substitute } from './parameters.js';

/** An item named in an answer: its section, its name or key, and why it is there. */
export interface ItemNote {
  readonly section: Section;
  readonly item: string;
  readonly reason?: string;
}

export interface InstallResult {
  readonly installationId: string;
  readonly action: Exclude<HistoryAction, 'uninstall'>;
  readonly outcome: Outcome;
  readonly template: string;
  readonly version: string;
  readonly previousVersion: string | null;
  readonly counts: { created: number; updated: number; unchanged: number; refusedCount: number };
  readonly refused: Refusal[];
  /** Items the user edited since the previous version was applied: left as they are. */
  readonly kept: ItemNote[];
  /** Items of the previous version the new one no longer has, removed. */
  readonly removed: ItemNote[];
  /** Triggers that were sent their once-event now. */
  readonly onceEvents: string[];
}

export interface UninstallResult {
  readonly installationId: string;
  readonly outcome: Outcome;
  readonly removed: ItemNote[];
  readonly kept: ItemNote[];
}

/**
 * Installs templates into accounts as imports (docs/templates.md): the document with the parameters substituted
 * goes through the Importer (the real-time path, never a dry run). Each installation keeps a snapshot of its items
 * as read back right after it was applied; an upgrade leaves the items that differ from their snapshot (the user's
 * edits) alone, an uninstall removes only the items the installation created and nobody edited since. Every action
 * is recorded in the history, in the same transaction as the installation.
 */
export class Installer {
  readonly #domain: () => Domain;
  readonly #store: SolutionStore;
  readonly #catalogue: TemplateCatalogue;
  readonly #once: OnceEvents;
  /** Installs into one account run one after another in this process (a second node meets the unique key). */
  readonly #running = new Map<string, Promise<unknown>>();

  constructor(deps: { domain: () => Domain; store: SolutionStore; catalogue: TemplateCatalogue; onceEvents: OnceEvents }) {
    this.#domain = deps.domain;
    this.#store = deps.store;
    this.#catalogue = deps.catalogue;
    this.#once = deps.onceEvents;
  }

  /** Installs, upgrades (a newer version of a template of the same name) or re-applies (the same version) a template. */
  async install(scope: Scope, input: { templateId: string; parameters?: Record<string, unknown> | undefined; accountId?: string | undefined }): Promise<InstallResult> {
    // A sub-account the caller may act in; it sees the caller's templates too (the caller's account is its ancestor).
    const target = input.accountId === undefined ? scope : await this.#domain().accounts.scopeFor(scope.principal, input.accountId);
    const template = await this.#catalogue.get(scope, input.templateId);
    const parameters = resolveValues(template.parameters, input.parameters ?? {});
    return this.#serially(target.accountId, () => this.#install(scope, target, template, parameters));
  }

  async uninstall(scope: Scope, installationId: string): Promise<UninstallResult> {
    return this.#serially(scope.accountId, () => this.#uninstall(scope, installationId));
  }

  async #install(caller: Scope, target: Scope, template: Template, parameters: Record<string, string | number | boolean>): Promise<InstallResult> {
    const domain = this.#domain();
    const document = substitute(template.document, template.parameters, parameters) as TemplateDocument;
    const previous = await this.#store.findInstallation(target.accountId, template.name);
    if (previous && compareVersions(template.version, previous.version) < 0) {
      throw new AppError('IOTB_TEMPLATE_DOWNGRADE', `Version ${previous.version} of "${template.name}" is installed; ${template.version} is older`, { installed: previous.version });
    }
    const items = itemsOf(document);
    const edited = previous ? await this.#edited(target, previous.snapshot) : new Set<string>();
    const applied = items.filter((entry) => !edited.has(refKey(entry.ref)));
    const kept: ItemNote[] = items.filter((entry) => edited.has(refKey(entry.ref))).map((entry) => note(entry.ref, `edited since ${previous!.version} was applied`));
    const existedBefore = await readCurrent(domain, target, applied.map(likeItem));

    const importer = new Importer(domain, target, { dryRun: false });
    let failure: unknown;
    try {
      await importer.run(readerOf(documentOf(document, applied)));
    } catch (error) {
      failure = error;
    }

    // Items of the previous version the new one has no more: removed when this installation created them, unedited.
    const wanted = new Set(items.map((entry) => refKey(entry.ref)));
    const dropped = (previous?.snapshot ?? []).filter((item) => !wanted.has(refKey(item)));
    const removal = await this.#remove(target, dropped, edited);
    kept.push(...removal.kept);

    const after = await readCurrent(domain, target, applied.map(likeItem));
    const before = new Map((previous?.snapshot ?? []).map((item) => [refKey(item), item]));
    const snapshot: SnapshotItem[] = [
      ...applied.map(({ ref }): SnapshotItem => {
        const key = refKey(ref);
        return { ...ref, value: after.get(key) ?? null, created: before.get(key)?.created ?? (!existedBefore.has(key) && after.has(key)) };
      }),
      // Edited items stay installed items, compared with what was applied before.
      ...[...before.values()].filter((item) => edited.has(refKey(item)) || removal.left.has(refKey(item))),
    ];

    const { counts } = importer;
    const outcome: Outcome = failure !== undefined ? 'failed' : counts.refusedCount === 0 ? 'done' : counts.created + counts.updated + counts.unchanged > 0 ? 'partial' : 'failed';
    const now = isoTime(Date.now());
    const installation: Installation = {
      id: previous?.id ?? newId(),
      accountId: target.accountId,
      templateId: template.id,
      templateName: template.name,
      version: template.version,
      parameters,
      snapshot,
      installedAt: previous?.installedAt ?? now,
      updatedAt: now,
      by: actorOf(caller),
    };
    const action = previous ? 'upgrade' : 'install';
    const summary = { created: counts.created, updated: counts.updated, unchanged: counts.unchanged, refusedCount: counts.refusedCount };
    const details = { counts: summary, refused: counts.refused.slice(0, 100), kept, removed: removal.removed, ...(previous ? { previousVersion: previous.version } : {}), ...(failure === undefined ? {} : { error: reasonOf(failure) }) };
    if (!(await this.#store.saveInstallation(installation, !previous, this.#entry(caller, installation, action, outcome, details, now)))) {
      throw new AppError('IOTB_TEMPLATE_INSTALL_BUSY', `"${template.name}" was installed into the account meanwhile`);
    }
    if (failure !== undefined) throw failure instanceof Error ? failure : new Error(reasonOf(failure));

    const onceEvents = outcome === 'failed' ? [] : await this.#emitOnce(target, installation, applied);
    return {
      installationId: installation.id,
      action,
      outcome,
      template: template.name,
      version: template.version,
      previousVersion: previous?.version ?? null,
      counts: summary,
      refused: [...counts.refused],
      kept,
      removed: removal.removed,
      onceEvents,
    };
  }

  async #uninstall(scope: Scope, installationId: string): Promise<UninstallResult> {
    const installation = await this.#store.getInstallation(scope.accountId, installationId);
    if (!installation) throw new AppError('IOTB_TEMPLATE_INSTALLATION_NOT_FOUND');
    const edited = await this.#edited(scope, installation.snapshot);
    const { removed, kept, failed } = await this.#remove(scope, installation.snapshot, edited);
    const outcome: Outcome = failed ? 'partial' : 'done';
    const now = isoTime(Date.now());
    await this.#store.removeInstallation(scope.accountId, installation.id, this.#entry(scope, installation, 'uninstall', outcome, { removed, kept }, now));
    return { installationId: installation.id, outcome, removed, kept };
  }

  /** Keys of snapshot items the account now holds otherwise than they were applied. */
  async #edited(scope: Scope, snapshot: readonly SnapshotItem[]): Promise<Set<string>> {
    const known = snapshot.filter((item) => item.value !== null);
    const current = await readCurrent(this.#domain(), scope, known.map((item) => ({ ref: item, like: item.value })));
    const edited = new Set<string>();
    for (const item of known) {
      const now = current.get(refKey(item));
      if (now !== undefined && !isDeepStrictEqual(now, item.value)) edited.add(refKey(item));
    }
    return edited;
  }

  /** Removes the created, unedited ones of `items` (what refers to others first); the rest is kept and said why. */
  async #remove(scope: Scope, items: readonly SnapshotItem[], edited: ReadonlySet<string>): Promise<{ removed: ItemNote[]; kept: ItemNote[]; left: Set<string>; failed: boolean }> {
    const removed: ItemNote[] = [];
    const kept: ItemNote[] = [];
    const left = new Set<string>();
    let failed = false;
    const ordered = [...items].sort((a, b) => REMOVAL_ORDER.indexOf(a.section) - REMOVAL_ORDER.indexOf(b.section));
    for (const item of ordered) {
      if (!item.created) continue;
      if (edited.has(refKey(item))) {
        kept.push(note(item, 'edited since it was installed'));
        continue;
      }
      try {
        if (await removeItem(this.#domain(), scope, item)) removed.push(note(item));
      } catch (error) {
        failed = true;
        left.add(refKey(item));
        kept.push(note(item, reasonOf(error)));
      }
    }
    return { removed, kept, left, failed };
  }

  /** The once-event of each applied trigger listening to it, now that it is installed. */
  async #emitOnce(scope: Scope, installation: Installation, applied: readonly DocumentItem[]): Promise<string[]> {
    const names = new Set(
      applied
        .filter((entry) => entry.ref.section === 'triggers' && Array.isArray(entry.item.events) && (entry.item.events as unknown[]).includes('once-event') && entry.item.library !== true)
        .map((entry) => entry.ref.name),
    );
    if (names.size === 0) return [];
    const triggers = (await this.#domain().triggers.list(scope, { offset: 0, limit: 1000 })).items.filter((trigger) => names.has(trigger.name) && trigger.enabled);
    return this.#once.emit(scope.accountId, { id: installation.id, template: installation.templateName, version: installation.version }, triggers);
  }

  #entry(scope: Scope, installation: Installation, action: HistoryAction, outcome: Outcome, details: Record<string, unknown>, at: string): HistoryEntry {
    return {
      id: newId(),
      accountId: installation.accountId,
      installationId: installation.id,
      templateId: installation.templateId,
      template: installation.templateName,
      version: installation.version,
      action,
      outcome,
      parameters: installation.parameters,
      details,
      at,
      by: actorOf(scope),
    };
  }

  /** Runs `work` after the account's installs under way in this process. */
  async #serially<T>(accountId: string, work: () => Promise<T>): Promise<T> {
    const before = this.#running.get(accountId) ?? Promise.resolve();
    const mine = before.catch(() => undefined).then(work);
    this.#running.set(accountId, mine);
    try {
      return await mine;
    } finally {
      if (this.#running.get(accountId) === mine) this.#running.delete(accountId);
    }
  }
}

function likeItem(entry: DocumentItem): { ref: ItemRef; like: unknown } {
  return { ref: entry.ref, like: entry.item };
}

function note(ref: ItemRef, reason?: string): ItemNote {
  return { section: ref.section, item: ref.service === undefined ? ref.name : `${ref.service}/${ref.name}`, ...(reason === undefined ? {} : { reason }) };
}

function readerOf(document: TemplateDocument): SectionReader {
  return async function* (section) {
    const items = document[section];
    if (Array.isArray(items)) yield* items as unknown[];
  };
}

function reasonOf(error: unknown): string {
  if (error instanceof AppError) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
