// Every page of the UI and the fragment path that shows it.

export type Route =
  | { readonly page: 'dashboard' }
  | { readonly page: 'endpoints' }
  | { readonly page: 'endpoint'; readonly id: string }
  | { readonly page: 'services' }
  | { readonly page: 'service'; readonly id: string }
  | { readonly page: 'triggers' }
  | { readonly page: 'trigger'; readonly id: string }
  | { readonly page: 'executions' }
  | { readonly page: 'history'; readonly id?: string }
  | { readonly page: 'files' }
  | { readonly page: 'file'; readonly name: string }
  | { readonly page: 'fota' }
  | { readonly page: 'fota-job'; readonly id: string }
  | { readonly page: 'map' }
  | { readonly page: 'location' }
  | { readonly page: 'reports' }
  | { readonly page: 'report'; readonly id: string }
  | { readonly page: 'alerts' }
  | { readonly page: 'alert'; readonly id: string }
  | { readonly page: 'alert-rules' }
  | { readonly page: 'logs' }
  | { readonly page: 'health' }
  | { readonly page: 'users' }
  | { readonly page: 'super' }
  | { readonly page: 'super-oidc' }
  | { readonly page: 'imex' }
  | { readonly page: 'licence' }
  | { readonly page: 'solutions' }
  | { readonly page: 'solution'; readonly id: string }
  | { readonly page: 'not-found' };

/** `/<section>` lists, `/<section>/<id>` shows one item (a name or an id, URL-encoded). */
const SECTIONS = {
  endpoints: (id?: string): Route => (id === undefined ? { page: 'endpoints' } : { page: 'endpoint', id }),
  services: (id?: string): Route => (id === undefined ? { page: 'services' } : { page: 'service', id }),
  triggers: (id?: string): Route => (id === undefined ? { page: 'triggers' } : id === 'executions' ? { page: 'executions' } : { page: 'trigger', id }),
  history: (id?: string): Route => (id === undefined ? { page: 'history' } : { page: 'history', id }),
  files: (name?: string): Route => (name === undefined ? { page: 'files' } : { page: 'file', name }),
  fota: (id?: string): Route => (id === undefined ? { page: 'fota' } : { page: 'fota-job', id }),
  map: (id?: string): Route => (id === undefined ? { page: 'map' } : { page: 'not-found' }),
  location: (id?: string): Route => (id === undefined ? { page: 'location' } : { page: 'not-found' }),
  reports: (id?: string): Route => (id === undefined ? { page: 'reports' } : { page: 'report', id }),
  alerts: (id?: string): Route => (id === undefined ? { page: 'alerts' } : id === 'rules' ? { page: 'alert-rules' } : { page: 'alert', id }),
  logs: (id?: string): Route => (id === undefined ? { page: 'logs' } : { page: 'not-found' }),
  health: (id?: string): Route => (id === undefined ? { page: 'health' } : { page: 'not-found' }),
  users: (id?: string): Route => (id === undefined ? { page: 'users' } : { page: 'not-found' }),
  super: (id?: string): Route => (id === undefined ? { page: 'super' } : id === 'oidc' ? { page: 'super-oidc' } : { page: 'not-found' }),
  imex: (id?: string): Route => (id === undefined ? { page: 'imex' } : { page: 'not-found' }),
  licence: (id?: string): Route => (id === undefined ? { page: 'licence' } : { page: 'not-found' }),
  solutions: (id?: string): Route => (id === undefined ? { page: 'solutions' } : { page: 'solution', id }),
} as const satisfies Record<string, (id?: string) => Route>;

function isSection(name: string): name is keyof typeof SECTIONS {
  return Object.hasOwn(SECTIONS, name);
}

export function matchRoute(path: string): Route {
  const parts = path.split('/').filter((part) => part !== '');
  const [first, second, ...rest] = parts;
  if (first === undefined) return { page: 'dashboard' };
  if (rest.length > 0 || !isSection(first)) return { page: 'not-found' };
  return SECTIONS[first](second === undefined ? undefined : decodeURIComponent(second));
}

/** The fragment path of one endpoint's page. */
export function endpointPath(id: string): string {
  return `/endpoints/${encodeURIComponent(id)}`;
}

/** The fragment path of one service's page (`new` for the form of a new one). */
export function servicePath(id: string): string {
  return `/services/${encodeURIComponent(id)}`;
}

/** The fragment path of one trigger's editor (`new` for a new trigger). */
export function triggerPath(id: string): string {
  return `/triggers/${encodeURIComponent(id)}`;
}

/** The executions log (`?triggerId=`, `?status=` as its filters). */
export const EXECUTIONS_PATH = '/triggers/executions';

/** The fragment path of one event of the history. */
export function eventPath(id: string): string {
  return `/history/${encodeURIComponent(id)}`;
}

/** The fragment path of one file of the repository. */
export function filePath(name: string): string {
  return `/files/${encodeURIComponent(name)}`;
}

/** The fragment path of one FOTA campaign. */
export function fotaJobPath(id: string): string {
  return `/fota/${encodeURIComponent(id)}`;
}

/** The fragment path of one report (by id). */
export function reportPath(id: string): string {
  return `/reports/${encodeURIComponent(id)}`;
}

/** The fragment path of one alert (by id). */
export function alertPath(id: string): string {
  return `/alerts/${encodeURIComponent(id)}`;
}

/** The alert rules and their form (`?edit=<id>` edits one). */
export const ALERT_RULES_PATH = '/alerts/rules';

/** The solution templates, their installations and history. */
export const SOLUTIONS_PATH = '/solutions';

/** The fragment path of one solution template (its install form). */
export function solutionPath(id: string): string {
  return `${SOLUTIONS_PATH}/${encodeURIComponent(id)}`;
}
