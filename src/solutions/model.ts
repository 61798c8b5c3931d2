// Solution templates (docs/templates.md): what is stored about templates, their installations, the history of
// installs, and the claims that make a template trigger's `once-event` fire exactly once.
import type { Page, PageRequest } from '../domain/pagination.js';
import type { Section } from '../imex/document.js';
import type { ParameterDefinition } from './parameters.js';

/** An import document (src/imex/document.ts) held as plain JSON: placeholders may sit where numbers go. */
export type TemplateDocument = Record<string, unknown>;

export interface Template {
  readonly id: string;
  /** The account that uploaded it: it and its sub-accounts see it (the root account's: every account). */
  readonly accountId: string;
  readonly accountPath: string;
  readonly name: string;
  /** Dot-separated numbers (`1.2.0`), compared part by part as numbers. */
  readonly version: string;
  readonly description: string;
  readonly parameters: Readonly<Record<string, ParameterDefinition>>;
  readonly document: TemplateDocument;
  readonly createdBy: string;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** One item of a document: its section and name (an endpoint: its key, and its service's name). */
export interface ItemRef {
  readonly section: Section;
  readonly name: string;
  readonly service?: string | undefined;
}

/** An installed item as it was right after the install or upgrade that last wrote it: edits are seen against it. */
export interface SnapshotItem extends ItemRef {
  /** The item read back from the account in the import document's shape; null when it was not there (refused). */
  readonly value: unknown;
  /** True when this installation created it (uninstall removes only those). */
  readonly created: boolean;
}

export interface Installation {
  readonly id: string;
  readonly accountId: string;
  readonly templateId: string;
  readonly templateName: string;
  readonly version: string;
  readonly parameters: Readonly<Record<string, unknown>>;
  readonly snapshot: readonly SnapshotItem[];
  readonly installedAt: string;
  readonly updatedAt: string;
  readonly by: string;
}

export const HISTORY_ACTIONS = ['install', 'upgrade', 'uninstall'] as const;
export type HistoryAction = (typeof HISTORY_ACTIONS)[number];
export const OUTCOMES = ['done', 'partial', 'failed'] as const;
export type Outcome = (typeof OUTCOMES)[number];

export interface HistoryEntry {
  readonly id: string;
  readonly accountId: string;
  readonly installationId: string;
  readonly templateId: string;
  readonly template: string;
  readonly version: string;
  readonly action: HistoryAction;
  readonly outcome: Outcome;
  readonly parameters: Readonly<Record<string, unknown>>;
  /** Counts, refusals, kept and removed items: what the answer to the request said. */
  readonly details: Readonly<Record<string, unknown>>;
  readonly at: string;
  readonly by: string;
}

/** A trigger's once-event, claimed before it is published; `emittedAt` is set once the bus accepted it. */
export interface OnceClaim {
  readonly triggerId: string;
  /** `<installation id>:<script hash>`: one event per installation and script of the trigger (docs/templates.md). */
  readonly claimKey: string;
  readonly accountId: string;
  /** The event's id, chosen at the claim: a resumed claim publishes the same event, or finds it published. */
  readonly eventId: string;
  readonly data: Readonly<Record<string, unknown>>;
  readonly claimedAt: string;
  readonly emittedAt: string | null;
}

export interface SolutionStore {
  /** False when the account has a template of this name and version already. */
  insertTemplate(template: Template): Promise<boolean>;
  /** False when the new name and version are another template's of the account. */
  updateTemplate(template: Template): Promise<boolean>;
  getTemplate(id: string): Promise<Template | undefined>;
  /** Templates of these accounts (an account and its ancestors), by name then version; without their documents. */
  listTemplates(accountIds: readonly string[], filter: { name?: string | undefined }, page: PageRequest): Promise<Page<Omit<Template, 'document'>>>;
  deleteTemplate(accountId: string, id: string): Promise<boolean>;

  getInstallation(accountId: string, id: string): Promise<Installation | undefined>;
  findInstallation(accountId: string, templateName: string): Promise<Installation | undefined>;
  listInstallations(accountId: string, page: PageRequest): Promise<Page<Installation>>;
  /**
   * Writes the installation (a new one when `isNew`) and its history entry in one transaction; false when a
   * new one collides with another installation of the same template name (a concurrent install).
   */
  saveInstallation(installation: Installation, isNew: boolean, entry: HistoryEntry): Promise<boolean>;
  /** Removes the installation and writes its history entry in one transaction. */
  removeInstallation(accountId: string, id: string, entry: HistoryEntry): Promise<void>;
  appendHistory(entry: HistoryEntry): Promise<void>;
  history(accountId: string, page: PageRequest): Promise<Page<HistoryEntry>>;

  /** Records the claim unless one with its trigger and key exists; true when this call made it. */
  claimOnce(claim: OnceClaim): Promise<boolean>;
  markEmitted(triggerId: string, claimKey: string, at: string): Promise<void>;
  /** Claims never marked emitted, claimed before `before`: a process died between claiming and publishing. */
  unemitted(before: string, limit: number): Promise<OnceClaim[]>;
  /** Takes over an unemitted claim (compare-and-set on its claim time); false when someone else did. */
  retakeClaim(triggerId: string, claimKey: string, claimedAt: string, now: string): Promise<boolean>;
}
