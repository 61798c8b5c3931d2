// The solution templates' types and calls (docs/templates.md), all from the API's generated types.
import { call, type ApiClient, type ApiData } from '../api/client';
import type { paths } from '../api/schema';

export type TemplateSummary = ApiData<'/solutions/templates'>['items'][number];
export type Template = ApiData<'/solutions/templates/{id}'>;
export type Installation = ApiData<'/solutions/installations'>['items'][number];
export type HistoryEntry = ApiData<'/solutions/history'>['items'][number];
export type Parameter = Template['parameters'][string];
export type InstallResult = paths['/solutions/install']['post']['responses'][200]['content']['application/json'];
export type UninstallResult = paths['/solutions/installations/{id}']['delete']['responses'][200]['content']['application/json'];

/** A parameter's value as the API takes it (no conversion there: "7" is not a number). */
export type ParameterValue = string | number | boolean;

/** `1.10` against `1.9`: part by part as numbers, as the API compares versions (negative when a is older). */
export function compareVersions(a: string, b: string): number {
  const left = a.split('.').map(Number);
  const right = b.split('.').map(Number);
  for (let index = 0; index < Math.max(left.length, right.length); index++) {
    const difference = (left[index] ?? 0) - (right[index] ?? 0);
    if (difference !== 0) return difference;
  }
  return 0;
}

/** The newest template of `name` the account sees that is newer than `version`, if any (GET /solutions/templates?name=). */
export async function newerTemplate(api: ApiClient, name: string, version: string): Promise<TemplateSummary | undefined> {
  const { items } = await call(api.GET('/solutions/templates', { params: { query: { name, limit: 1000 } } }));
  return items
    .filter((item) => item.name === name && compareVersions(item.version, version) > 0)
    .sort((a, b) => compareVersions(b.version, a.version))[0];
}

/**
 * `POST /solutions/templates`: a template's JSON as the page read it (sent as it is, so the API's check of it is
 * the one that speaks), or `{"file"}` naming a file of the account's repository.
 */
export function uploadTemplate(api: ApiClient, source: { readonly json: string } | { readonly file: string }): Promise<Template> {
  if ('file' in source) return call(api.POST('/solutions/templates', { body: { file: source.file } }));
  // The text goes as it is (openapi-fetch sets the JSON content type); `body` only satisfies the types.
  return call(api.POST('/solutions/templates', { body: {}, bodySerializer: () => source.json }));
}
