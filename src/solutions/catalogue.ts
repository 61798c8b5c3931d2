import { Type, type Static } from 'typebox';
import { Value } from 'typebox/value';
import type { Files } from '../domain/files.js';
import { newId } from '../domain/ids.js';
import { pageRequest, type Page } from '../domain/pagination.js';
import { isWithin, type Scope } from '../domain/scope.js';
import { isoTime } from '../domain/time.js';
import { AppError } from '../errors.js';
import { DOCUMENT_FORMAT, DOCUMENT_VERSION, SECTIONS } from '../imex/document.js';
import type { SolutionStore, Template } from './model.js';
import { checkDefinitions, ParameterDefinition, PARAMETER_NAME, PARAMETERS_MAX } from './parameters.js';
import { readZipEntry, ZipError } from './zip-entry.js';

/** Largest template, as JSON or inside a zip (and the largest zip read). */
export const TEMPLATE_MAX_BYTES = 8 * 1024 * 1024;
/** The entry of a zip that holds the template. */
export const ZIP_ENTRY = 'template.json';

export const TemplateVersion = Type.String({ pattern: '^\\d{1,9}(\\.\\d{1,9}){0,3}$', description: 'Dot-separated numbers (`1.2.0`), compared part by part as numbers' });

export const TemplateInput = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200, pattern: '^[^\\u0000-\\u001f]+$' }),
    version: TemplateVersion,
    description: Type.Optional(Type.String({ maxLength: 10_000 })),
    document: Type.Record(Type.String(), Type.Unknown(), { description: 'An import document (GET /imex/export); strings may hold `{{parameter}}` placeholders' }),
    parameters: Type.Optional(
      Type.Record(Type.String({ pattern: PARAMETER_NAME }), ParameterDefinition, { maxProperties: PARAMETERS_MAX, description: 'The form of the install: name → definition' }),
    ),
  },
  { additionalProperties: false },
);
export type TemplateInput = Static<typeof TemplateInput>;

/** Negative, zero or positive as `a` is older than, the same as or newer than `b` (`1.10` is newer than `1.9`). */
export function compareVersions(a: string, b: string): number {
  const left = a.split('.').map(Number);
  const right = b.split('.').map(Number);
  for (let i = 0; i < Math.max(left.length, right.length); i++) {
    const difference = (left[i] ?? 0) - (right[i] ?? 0);
    if (difference !== 0) return difference;
  }
  return 0;
}

/**
 * The template catalogue (`/solutions/templates`): an account sees its own templates and those of its ancestors
 * (the root account's are everyone's) and changes only its own. Uploaded as JSON, or named in the account's file
 * repository as a `.json` file or a `.zip` holding `template.json`.
 */
export class TemplateCatalogue {
  readonly #store: SolutionStore;
  readonly #files: Files;

  constructor(store: SolutionStore, files: Files) {
    this.#store = store;
    this.#files = files;
  }

  async create(scope: Scope, input: TemplateInput): Promise<Template> {
    checkTemplate(input);
    const now = isoTime(Date.now());
    const template: Template = { id: newId(), accountId: scope.accountId, accountPath: scope.accountPath, ...fields(input), createdBy: actorOf(scope), createdAt: now, updatedAt: now };
    if (!(await this.#store.insertTemplate(template))) throw taken(input);
    return template;
  }

  /** The template in a file of the acting account's repository (`.json`, or `.zip` with `template.json`). */
  async fromFile(scope: Scope, name: string): Promise<TemplateInput> {
    const read = await this.#files.read(scope.accountId, name);
    if (read.file.size > TEMPLATE_MAX_BYTES) {
      read.stream.destroy();
      throw new AppError('IOTB_TEMPLATE_INVALID', `The file is larger than ${TEMPLATE_MAX_BYTES} bytes`);
    }
    const chunks: Buffer[] = [];
    for await (const chunk of read.stream) chunks.push(chunk as Buffer);
    const bytes = Buffer.concat(chunks);
    let text: string;
    if (name.toLowerCase().endsWith('.zip')) {
      let entry: Buffer | undefined;
      try {
        entry = readZipEntry(bytes, ZIP_ENTRY, TEMPLATE_MAX_BYTES);
      } catch (error) {
        if (error instanceof ZipError || (error as { code?: string }).code?.startsWith('Z_')) throw new AppError('IOTB_TEMPLATE_INVALID', `The zip cannot be read: ${(error as Error).message}`);
        throw error;
      }
      if (!entry) throw new AppError('IOTB_TEMPLATE_INVALID', `The zip holds no ${ZIP_ENTRY}`);
      text = entry.toString('utf8');
    } else if (name.toLowerCase().endsWith('.json')) {
      text = bytes.toString('utf8');
    } else {
      throw new AppError('IOTB_TEMPLATE_INVALID', 'A template file is a .json file or a .zip holding template.json');
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      throw new AppError('IOTB_TEMPLATE_INVALID', `The template is not JSON: ${(error as Error).message}`);
    }
    if (!Value.Check(TemplateInput, parsed)) {
      const first = Value.Errors(TemplateInput, parsed)[0];
      throw new AppError('IOTB_TEMPLATE_INVALID', `The template in the file: ${first ? `${first.instancePath || '/'} ${first.message}` : 'not a template'}`);
    }
    return parsed;
  }

  /** The templates the acting account sees, without their documents. */
  list(scope: Scope, filter: { name?: string | undefined; limit?: number | undefined; offset?: number | undefined }): Promise<Page<Omit<Template, 'document'>>> {
    return this.#store.listTemplates(ancestorIds(scope.accountPath), { name: filter.name }, pageRequest(filter.limit, filter.offset));
  }

  /** A template the acting account sees; 404 for any other (another account's answers the same as none). */
  async get(scope: Scope, id: string): Promise<Template> {
    const template = await this.#store.getTemplate(id);
    if (!template || !isWithin(scope.accountPath, template.accountPath)) throw new AppError('IOTB_TEMPLATE_NOT_FOUND');
    return template;
  }

  async replace(scope: Scope, id: string, input: TemplateInput): Promise<Template> {
    const current = await this.#own(scope, id);
    checkTemplate(input);
    const template: Template = { ...current, ...fields(input), updatedAt: isoTime(Date.now()) };
    if (!(await this.#store.updateTemplate(template))) throw taken(input);
    return template;
  }

  /** Deletes a template; its installations stay (they hold what they applied) but cannot be upgraded from it. */
  async delete(scope: Scope, id: string): Promise<void> {
    await this.#own(scope, id);
    await this.#store.deleteTemplate(scope.accountId, id);
  }

  async #own(scope: Scope, id: string): Promise<Template> {
    const template = await this.get(scope, id);
    if (template.accountId !== scope.accountId) throw new AppError('IOTB_TEMPLATE_INHERITED');
    return template;
  }
}

/** Who acted, as the history and the catalogue record it: the user, or else the token. */
export function actorOf(scope: Scope): string {
  return scope.principal.userId ?? scope.principal.tokenId;
}

/** Ids of the account at `path` and its ancestors, root first. */
function ancestorIds(path: string): string[] {
  return path.split('/').filter(Boolean);
}

function fields(input: TemplateInput): Pick<Template, 'name' | 'version' | 'description' | 'parameters' | 'document'> {
  return { name: input.name, version: input.version, description: input.description ?? '', parameters: input.parameters ?? {}, document: input.document };
}

/** An import document (format, version, sections that are lists) with parameters that make sense. */
function checkTemplate(input: TemplateInput): void {
  const { document } = input;
  if (document.format !== DOCUMENT_FORMAT) throw new AppError('IOTB_TEMPLATE_INVALID', `The document's "format" is not "${DOCUMENT_FORMAT}" (GET /imex/export writes it)`);
  if (typeof document.version !== 'number' || document.version > DOCUMENT_VERSION) {
    throw new AppError('IOTB_TEMPLATE_INVALID', `The document's "version" is ${JSON.stringify(document.version)}: this service reads versions up to ${DOCUMENT_VERSION}`);
  }
  for (const section of SECTIONS) {
    if (document[section] !== undefined && !Array.isArray(document[section])) throw new AppError('IOTB_TEMPLATE_INVALID', `The document's "${section}" is not a list`);
  }
  checkDefinitions(input.parameters ?? {});
}

function taken(input: TemplateInput): AppError {
  return new AppError('IOTB_TEMPLATE_TAKEN', `The account has the template "${input.name}" ${input.version} already`, { name: input.name, version: input.version });
}
