// Which field of the rule form the API's refusal is about, so its message shows next to that field. The API names it
// in `error.details`: `{field: "condition.minutes"}` from the rule checks, or `[{path: "/condition/value", params}]`
// from the request schema.
import { ApiError, call, type ErrorBody } from '../api/client';

/** The form's fields, as the API names them. */
export const RULE_FIELDS = [
  'name',
  'severity',
  'tags',
  'enabled',
  'condition.type',
  'condition.event',
  'condition.field',
  'condition.op',
  'condition.value',
  'condition.minutes',
  'condition.tags',
  'condition.percent',
  'condition.minRuns',
  'condition.triggerId',
  'notify.email',
  'notify.webhook.url',
  'notify.webhook.secret',
] as const;
export type RuleField = (typeof RULE_FIELDS)[number];

/** A refusal of the rule, with the form field it is about (undefined: the rule as a whole). */
export class RuleError extends ApiError {
  readonly field: RuleField | undefined;

  constructor(status: number, code: string | undefined, message: string, field: RuleField | undefined) {
    super(status, code, message);
    this.field = field;
  }
}

interface SchemaIssue {
  readonly path?: unknown;
  readonly message?: unknown;
  readonly params?: { readonly missingProperty?: unknown };
}

/** The dotted name of what a schema issue is about: `/condition` missing `minutes` → `condition.minutes`. */
function issuePath(issue: SchemaIssue): string {
  const parts = typeof issue.path === 'string' ? issue.path.split('/').filter((part) => part !== '') : [];
  if (typeof issue.params?.missingProperty === 'string') parts.push(issue.params.missingProperty);
  return parts.join('.');
}

/** The form field a dotted path falls in: `notify.email.0` → `notify.email`, `condition` → `condition.type`. */
export function ruleFieldOf(path: string | undefined): RuleField | undefined {
  if (path === undefined || path === '') return undefined;
  const exact = [...RULE_FIELDS].sort((a, b) => b.length - a.length).find((field) => path === field || path.startsWith(`${field}.`));
  if (exact !== undefined) return exact;
  if (path.startsWith('notify.webhook')) return 'notify.webhook.url';
  if (path.startsWith('condition')) return 'condition.type';
  return undefined;
}

/**
 * The field and message of a refusal. The rule checks name one `field`. The request schema lists issues: with the
 * condition a union of kinds, one per kind tried (each kind's first complaint), so the issue kept is the first
 * about a field the form shows for the chosen kind, worded like the API's message for that issue alone.
 */
export function refusalOf(message: string, details: unknown, shown: readonly RuleField[]): { field: RuleField | undefined; message: string } {
  // A field the form does not show has nowhere to hold the message: it goes under the form.
  const visible = (field: RuleField | undefined) => (field !== undefined && shown.includes(field) ? field : undefined);
  if (typeof details === 'object' && details !== null && !Array.isArray(details)) {
    const field = (details as { field?: unknown }).field;
    return { field: visible(ruleFieldOf(typeof field === 'string' ? field : undefined)), message };
  }
  if (!Array.isArray(details) || details.length === 0) return { field: undefined, message };
  const issues = details as SchemaIssue[];
  const fields = issues.map((issue) => ruleFieldOf(issuePath(issue)));
  // Another kind's `type` mismatch says nothing about this one: an issue about one of this kind's fields comes first.
  let index = fields.findIndex((field) => field !== undefined && field !== 'condition.type' && shown.includes(field));
  if (index === -1) index = fields.findIndex((field) => field !== undefined && shown.includes(field));
  if (index === -1) return { field: undefined, message };
  if (issues.length === 1) return { field: fields[index], message };
  const issue = issues[index]!;
  return { field: fields[index], message: `Invalid body: body${typeof issue.path === 'string' && issue.path !== '/' ? issue.path : ''} ${String(issue.message)}` };
}

interface Result<T> {
  readonly data?: T;
  readonly error?: unknown;
  readonly response: Response;
}

/** Like {@link call}, but a refusal throws a {@link RuleError} naming the form field (among `shown`) it is about. */
export async function callForRule<T>(request: Promise<Result<T>>, shown: readonly RuleField[]): Promise<T> {
  let result: Result<T>;
  try {
    result = await request;
  } catch (error) {
    // The service could not be asked: call() words it.
    return call<T>(Promise.reject(error instanceof Error ? error : new Error(String(error))));
  }
  const body = result.error as ErrorBody | undefined;
  if (!result.response.ok && typeof body?.error.message === 'string') {
    const refusal = refusalOf(body.error.message, body.error.details, shown);
    throw new RuleError(result.response.status, body.error.code, refusal.message, refusal.field);
  }
  return call(Promise.resolve(result));
}
