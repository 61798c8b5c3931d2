import type { Scope } from '../../domain/scope.js';
import { createEvent, type Event } from '../../events/event.js';
import type { Trigger } from '../triggers.js';
import { objectArg, ScriptArgumentError, stringArg, stringField, type Namespace, type ScriptContext } from './namespace.js';

/** How deep exec.sync may nest (a trigger that syncs a trigger that syncs …). */
const MAX_SYNC_DEPTH = 3;

/** The scope to act in: the trigger's own account, or the account that issued `options.appToken`. */
async function targetScope(context: ScriptContext, options: Record<string, unknown>): Promise<Scope> {
  const appToken = stringField(options, 'appToken');
  if (appToken === undefined) return context.scope;
  const principal = await context.domain.tokens.authenticate(appToken);
  if (principal.kind !== 'app') throw new ScriptArgumentError('appToken must be an app token (POST /tokens with "type": "app")');
  return context.domain.accounts.scopeFor(principal);
}

async function prepare(context: ScriptContext, args: unknown[], sync: boolean): Promise<{ trigger: Trigger; event: Event }> {
  const options = objectArg(args, 2, 'options');
  const scope = await targetScope(context, options);
  const trigger = await context.domain.triggers.find(scope, stringArg(args, 0, 'trigger'));
  if (!trigger.enabled || trigger.library) throw new ScriptArgumentError(`trigger "${trigger.name}" is ${trigger.library ? 'a library' : 'disabled'}`);
  const event = createEvent({
    type: 'output',
    accountId: scope.accountId,
    data: {
      trigger: trigger.id,
      sync,
      data: args[1] ?? null,
      from: { accountId: context.scope.accountId, triggerId: context.trigger.id, eventId: context.event.id },
    },
  });
  return { trigger, event };
}

/**
 * `exec.*`: run another trigger (of this account, or of the account whose app token is given) with data.
 * Both produce an `output` event in the target account's history; the target trigger sees it as `event`
 * with `event.data.data` the data passed.
 */
export const execNamespace: Namespace = {
  name: 'exec',
  functions: {
    /** exec.now(trigger, data?, {appToken}?) queues the run (the target runs from the bus) → the output event's id. */
    now: async (context, args) => {
      const { event } = await prepare(context, args, false);
      await context.domain.events.publish(event);
      return event.id;
    },
    /** exec.sync(trigger, data?, {appToken}?) runs it now and waits → {status, error, reply} (reply: what it gave trigger.reply, else null). */
    sync: async (context, args) => {
      if (context.depth >= MAX_SYNC_DEPTH) throw new ScriptArgumentError(`exec.sync nests at most ${MAX_SYNC_DEPTH} deep`);
      const { trigger, event } = await prepare(context, args, true);
      await context.domain.events.publish(event); // for the history; the engine does not run sync output events again
      const reply = context.domain.replies.expect(event.id, context.wallTimeoutMs);
      const execution = await context.runTrigger(trigger, event, context.depth + 1);
      await context.domain.replies.reply(event.id, null); // no reply given: stop waiting
      return { status: execution.status, error: execution.error, reply: await reply };
    },
  },
};
