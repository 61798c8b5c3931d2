import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TestService } from './service.js';

let counter = 0;

export interface ScriptResult {
  readonly status: 'success' | 'failed';
  readonly error: string | null;
  readonly line: number | null;
  readonly logs: string[];
}

/**
 * Runs `script` the way users' scripts run: a trigger is created for a fresh event type, a real event is
 * posted through the API (and so through the bus), and the recorded execution is returned.
 */
export async function runScript(
  service: TestService,
  token: string,
  script: string,
  event: { endpoint?: string; data?: unknown } = {},
  globals: Record<string, { value: unknown; protected: boolean }> = {},
): Promise<ScriptResult> {
  const type = `script-test-${process.pid}-${counter++}`;
  const trigger = await service.request('POST', '/triggers', { token, body: { name: type, events: [type], script, globals } });
  assert.equal(trigger.status, 201, JSON.stringify(trigger.body));
  const posted = await service.request('POST', '/events', { token, body: { type, ...event } });
  assert.equal(posted.status, 202, JSON.stringify(posted.body));
  const deadline = Date.now() + 15_000;
  for (;;) {
    const list = await service.request('GET', `/executions?triggerId=${trigger.body.id}`, { token });
    const [execution] = list.body.items as ScriptResult[];
    if (execution) {
      await service.request('DELETE', `/triggers/${trigger.body.id}`, { token });
      return execution;
    }
    if (Date.now() > deadline) throw new Error(`no execution of ${type}`);
    await sleep(20);
  }
}
