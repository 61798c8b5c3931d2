import { objectArg, ScriptArgumentError, stringField, type Namespace } from './namespace.js';

/** Mails one account may send per hour: scripts run on every event, and a loop must not turn into spam. */
const PER_HOUR = 100;
const MAX_RECIPIENTS = 20;
const EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;

/**
 * Mails sent this hour, by account. Kept here, out of scripts' reach: in the account's script cache, where it
 * was, `cache.delete` reset it and other accounts' entries could evict it.
 */
const sentThisHour = new Map<string, { hour: number; count: number }>();

/** Counts one mail of the account → how many it sent this hour, this one included. */
function countMail(accountId: string): number {
  const hour = Math.floor(Date.now() / 3_600_000);
  const entry = sentThisHour.get(accountId);
  if (entry?.hour === hour) return ++entry.count;
  if (sentThisHour.size >= 10_000) for (const [id, old] of sentThisHour) if (old.hour !== hour) sentThisHour.delete(id);
  sentThisHour.set(accountId, { hour, count: 1 });
  return 1;
}

function recipients(value: unknown): string[] {
  const list = Array.isArray(value) ? value : [value];
  if (list.length === 0 || list.length > MAX_RECIPIENTS || !list.every((v) => typeof v === 'string' && EMAIL.test(v))) {
    throw new ScriptArgumentError(`to is an email address or a list of 1 to ${MAX_RECIPIENTS}`);
  }
  return list as string[];
}

/** A table as CSV (RFC 4180 quoting), for attaching report data. */
function csv(table: Record<string, unknown>): string {
  const columns: unknown = table.columns;
  const rows: unknown = table.rows;
  if (!Array.isArray(columns) || !Array.isArray(rows)) throw new ScriptArgumentError('table is {name?, columns: [...], rows: [[...], ...]}');
  const cell = (v: unknown) => {
    const text = v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v);
    return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
  };
  const lines: unknown[] = [columns, ...(rows as unknown[])];
  return lines.map((row) => (Array.isArray(row) ? (row as unknown[]) : [row]).map(cell).join(',')).join('\r\n') + '\r\n';
}

/** `email.send`: mail over the operator's SMTP server, at most 100 per account per hour. */
export const emailNamespace: Namespace = {
  name: 'email',
  functions: {
    /** email.send({to, subject, text, html?, table?: {name?, columns, rows}}) → {messageId}; a table goes as a CSV attachment. */
    send: async (context, args) => {
      const message = objectArg(args, 0, 'message');
      const to = recipients(message.to);
      const subject = stringField(message, 'subject') ?? '';
      const text = stringField(message, 'text') ?? '';
      const html = stringField(message, 'html');
      const table = message.table === undefined || message.table === null ? undefined : objectArg([message.table], 0, 'table');
      if (countMail(context.scope.accountId) > PER_HOUR) throw new ScriptArgumentError(`this account sent ${PER_HOUR} mails this hour; try later`);
      const name = table && typeof table.name === 'string' && /^[\w. -]{1,100}$/.test(table.name) ? table.name : 'table';
      return context.mailer.send({
        to,
        subject,
        text,
        html,
        attachments: table ? [{ filename: `${name}.csv`, content: csv(table), contentType: 'text/csv' }] : undefined,
      });
    },
  },
};
