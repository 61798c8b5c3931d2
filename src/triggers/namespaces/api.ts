import { ScriptArgumentError, stringArg, type Namespace, type ScriptContext } from './namespace.js';

function path(args: unknown[]): string {
  const value = stringArg(args, 0, 'path');
  if (!value.startsWith('/') || value.startsWith('//')) throw new ScriptArgumentError('path is the API path, such as "/endpoints?tag=site:berlin"');
  return value;
}

const call = (method: 'GET' | 'POST' | 'PUT' | 'DELETE') => (context: ScriptContext, args: unknown[]) =>
  context.api.call(context.scope, method, path(args), method === 'POST' || method === 'PUT' ? (args[1] ?? {}) : undefined);

/**
 * `api.*`: the service's own HTTP API, as the trigger's account (with no more rights than an API token of
 * it), answered in-process. Each returns `{status, body}`; errors are answers (`status` ≥ 400), not throws.
 */
export const apiNamespace: Namespace = {
  name: 'api',
  functions: {
    /** api.get(path) */
    get: call('GET'),
    /** api.post(path, body) */
    post: call('POST'),
    /** api.put(path, body) */
    put: call('PUT'),
    /** api.delete(path) */
    delete: call('DELETE'),
  },
};
