import type { Domain } from '../domain/domain.js';
import { newId } from '../domain/ids.js';
import type { Scope } from '../domain/scope.js';
import type { CustomEventInput } from '../events/events.js';
import type { TriggerEngine } from './engine.js';
import type { Execution } from './executions.js';
import { normaliseTrigger, type Trigger, type TriggerInput } from './triggers.js';

/** What a test-run of a trigger definition answers: its execution, and what it replied with `trigger.reply(data)`. */
export interface DraftRun {
  readonly execution: Execution;
  readonly replied: boolean;
  readonly reply: unknown;
}

/** Nothing replied: told apart from a script that replied `null`. */
const NO_REPLY = Symbol('no reply');

/**
 * Test-runs a trigger definition that need not be saved (the editor's "write, test-run, save"): the same
 * engine, sandbox limits and account scope as a saved trigger's test run, recorded as a test execution.
 * With `triggerId` (a trigger of the acting account) the execution is recorded against that trigger,
 * otherwise against a fresh id that names no trigger. The run's script is version 0 of that id, which no
 * saved version has, so a compiled saved version is never mistaken for the draft.
 */
export async function runDraft(
  deps: { domain: Domain; engine: TriggerEngine },
  scope: Scope,
  input: { trigger: TriggerInput; event: CustomEventInput; triggerId?: string | undefined },
): Promise<DraftRun> {
  const { domain, engine } = deps;
  // Checked as its save would be, before the run.
  const definition = normaliseTrigger(input.trigger);
  const saved = input.triggerId === undefined ? undefined : await domain.triggers.get(scope, input.triggerId);
  const event = await domain.events.build(scope, input.event);
  const now = new Date().toISOString();
  const draft: Trigger = {
    ...definition,
    id: saved?.id ?? newId(),
    accountId: scope.accountId,
    version: 0,
    createdAt: saved?.createdAt ?? now,
    updatedAt: now,
  };

  // The run's trigger.reply(data) answers this wait; once the run is over, NO_REPLY ends it if nothing did.
  const reply = domain.replies.expect(event.id, 2_147_483_647);
  let execution: Execution;
  try {
    execution = await engine.run(draft, event, true);
  } finally {
    await domain.replies.reply(event.id, NO_REPLY);
  }
  const answer = await reply;
  return answer === NO_REPLY ? { execution, replied: false, reply: null } : { execution, replied: true, reply: answer };
}
