import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Scope } from '../domain/scope.js';

/** The header an in-process call carries instead of a token. */
export const INTERNAL_CALL_HEADER = 'x-iotbridge-internal-call';

export interface ApiResponse {
  readonly status: number;
  readonly body: unknown;
}

/**
 * Calls of the service's own HTTP API from inside the process (the scripts' `api` namespace), acting in a
 * given scope. Each call gets a single-use random key that never leaves the process (requests are
 * injected, not sent over a socket), so nothing outside can use this way in.
 */
export class InternalCalls {
  readonly #pending = new Map<string, Scope>();
  #app: FastifyInstance | undefined;

  /** Binds the HTTP app once it is built. */
  attach(app: FastifyInstance): void {
    this.#app = app;
  }

  /** The scope of an internal call, consumed; undefined for an unknown key. */
  take(key: string): Scope | undefined {
    const scope = this.#pending.get(key);
    this.#pending.delete(key);
    return scope;
  }

  async call(scope: Scope, method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, body?: unknown): Promise<ApiResponse> {
    if (!this.#app) throw new Error('the HTTP API is not running');
    const key = randomBytes(24).toString('base64url');
    this.#pending.set(key, scope);
    try {
      const response = await this.#app.inject({
        method,
        url,
        headers: { [INTERNAL_CALL_HEADER]: key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
      });
      const text = response.body;
      let parsed: unknown = text;
      try {
        parsed = text === '' ? null : JSON.parse(text);
      } catch {
        // not JSON (the docs page): give the text
      }
      return { status: response.statusCode, body: parsed };
    } finally {
      this.#pending.delete(key);
    }
  }
}
