import { SEVERITIES, type Alert, type Severity } from '../../alerts/model.js';
import { deviceCall, objectArg, ScriptArgumentError, type Namespace, type ScriptContext } from './namespace.js';

const NAME_MAX = 200;
const NOTE_MAX = 1000;

/** The endpoint an alert is about: `endpoint` given (id or `k.<key>`), null for none, absent: the event's endpoint. */
async function subject(context: ScriptContext, options: Record<string, unknown>): Promise<{ endpointId: string | null; endpointKey: string | null }> {
  const ref = Object.hasOwn(options, 'endpoint') ? options.endpoint : context.event.endpointId;
  if (ref === null || ref === undefined) return { endpointId: null, endpointKey: null };
  if (typeof ref !== 'string' || ref === '') throw new ScriptArgumentError('endpoint is an id, "k.<key>", or null for no endpoint');
  const endpoint = await deviceCall(() => context.domain.endpoints.get(context.scope, ref));
  return { endpointId: endpoint.id, endpointKey: endpoint.key };
}

function name(value: unknown): string {
  if (typeof value !== 'string' || value === '' || value.length > NAME_MAX) throw new ScriptArgumentError(`name is a non-empty string of at most ${NAME_MAX} characters`);
  return value;
}

function note(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value.length > NOTE_MAX) throw new ScriptArgumentError(`note is a string of at most ${NOTE_MAX} characters`);
  return value;
}

function shown(alert: Alert | undefined): unknown {
  return alert ? { id: alert.id, name: alert.name, state: alert.state, severity: alert.severity, endpointKey: alert.endpointKey, occurrences: alert.occurrences } : null;
}

/** `alert.*`: scripts raise and close the account's alerts (docs/reports-alerts.md "Alerts from scripts"). */
export const alertNamespace: Namespace = {
  name: 'alert',
  functions: {
    /**
     * alert.raise({name, severity?, tags?, endpoint?, value?, note?}) → {id, name, state, severity, endpointKey, occurrences}:
     * opens an alert (notified like a rule's: an `alert` event), or counts one more occurrence on the open one of the
     * same name and endpoint. `endpoint` defaults to the event's; null raises it for no endpoint. Example:
     * `if (event.data.battery < 10) alert.raise({name: 'battery low', severity: 'minor', tags: ['power'], value: event.data.battery});`
     */
    raise: async (context, args) => {
      const options = objectArg(args, 0, 'options');
      const severity = options.severity ?? 'warning';
      if (!SEVERITIES.includes(severity as Severity)) throw new ScriptArgumentError(`severity is one of ${SEVERITIES.join(', ')}`);
      const tags = options.tags ?? [];
      if (!Array.isArray(tags) || tags.length > 50 || !tags.every((tag) => typeof tag === 'string' && tag !== '' && tag.length <= 385)) throw new ScriptArgumentError('tags is a list of up to 50 strings');
      const value = options.value;
      if (value !== undefined && JSON.stringify(value).length > 10_000) throw new ScriptArgumentError('value is at most 10,000 characters of JSON');
      const alert = await context.domain.alerts.raise(context.scope, {
        name: name(options.name),
        severity: severity as Severity,
        tags: tags as string[],
        ...(await subject(context, options)),
        value,
        note: note(options.note),
      });
      return shown(alert);
    },
    /**
     * alert.close(id) or alert.close({name, endpoint?, note?}) → the closed alert, or null when none is open: closes an
     * alert by id, or the open one a script raised under that name (endpoint as in raise).
     */
    close: async (context, args) => {
      if (typeof args[0] === 'string') {
        if (args[0] === '') throw new ScriptArgumentError('an alert id is a non-empty string');
        return shown(await context.domain.alerts.closeRaised(context.scope, { id: args[0] }, note((args[1] as { note?: unknown } | undefined)?.note)));
      }
      const options = objectArg(args, 0, 'options');
      const target = { name: name(options.name), endpointId: (await subject(context, options)).endpointId };
      return shown(await context.domain.alerts.closeRaised(context.scope, target, note(options.note)));
    },
  },
};
