import assert from 'node:assert/strict';
import type { Response, TestService } from './service.js';

/** An account below the root with its own API token. */
export interface TestAccount {
  readonly accountId: string;
  readonly token: string;
}

export async function createAccount(service: TestService, name: string, options: { token?: string; parentId?: string } = {}): Promise<TestAccount> {
  const created = await service.request('POST', '/accounts', { token: options.token, body: { name, ...(options.parentId ? { parentId: options.parentId } : {}) } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const accountId = created.body.accountId as string;
  const issued = await service.request('POST', '/tokens', { token: options.token, account: accountId, body: { name: `${name} token` } });
  assert.equal(issued.status, 201, JSON.stringify(issued.body));
  return { accountId, token: issued.body.token as string };
}

export async function createService(service: TestService, token: string, body: Record<string, unknown> = {}): Promise<string> {
  const created = await service.request('POST', '/services', { token, body: { name: 'svc', type: 'lwm2m', ...body } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return created.body.id as string;
}

export async function createEndpoint(service: TestService, token: string, body: Record<string, unknown>): Promise<Record<string, any>> {
  const created = await service.request('POST', '/endpoints', { token, body });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return created.body as Record<string, any>;
}

/** Asserts the one error body (`{"error":{code, message, details?}}`) with this status and code. */
export function assertError(response: Response, status: number, code: string, what: string): void {
  assert.equal(response.status, status, `${what}: ${JSON.stringify(response.body)}`);
  assert.deepEqual(Object.keys(response.body as object), ['error'], what);
  assert.equal(response.body.error.code, code, what);
  assert.equal(typeof response.body.error.message, 'string', what);
  assert.ok(Object.keys(response.body.error).every((name) => ['code', 'message', 'details'].includes(name)), what);
}
