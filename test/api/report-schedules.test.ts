// Issue 20, scheduled reports: a report with a schedule is mailed as a CSV attachment (read back from a local SMTP
// server and parsed) holding exactly the entries of the period that ended, once even when two checks run; the
// next mailing is stored and survives a restart; "mail now" over the API; refusals without an SMTP server, for
// bad schedules and across accounts.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { parse } from 'csv-parse/sync';
import { SMTPServer } from 'smtp-server';
import { waitFor } from '../helpers/devices.js';
import { assertError, createAccount, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

interface Mail {
  readonly to: string[];
  readonly data: string;
}

/** The attachment of a MIME message nodemailer wrote (base64 or quoted-printable), as text. */
function attachment(mail: Mail): { filename: string; text: string } {
  const part = mail.data.split(/\r?\n--/).find((chunk) => /filename=/i.test(chunk));
  assert.ok(part, 'the mail has an attachment');
  const [head, ...body] = part.split(/\r?\n\r?\n/);
  const filename = /filename="?([^";\r\n]+)"?/i.exec(head!)![1]!;
  const raw = body.join('\n\n');
  const encoding = /content-transfer-encoding:\s*([\w-]+)/i.exec(head!)?.[1]?.toLowerCase();
  const text =
    encoding === 'base64'
      ? Buffer.from(raw.replace(/\s+/g, ''), 'base64').toString('utf8')
      : encoding === 'quoted-printable'
        ? Buffer.from(raw.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1').toString('utf8')
        : raw;
  return { filename, text };
}

const DAY = 86_400_000;

for (const dialect of DIALECTS) {
  describe(`scheduled reports (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let other: TestAccount;
    let smtp: SMTPServer;
    const mails: Mail[] = [];

    const publish = async (time: number, meter: string, kwh: number) => {
      const posted = await service.request('POST', '/reports/energy/entries', { token: tenant.token, body: { time: new Date(time).toISOString(), data: { meter, kwh } } });
      assert.equal(posted.status, 201, JSON.stringify(posted.body));
    };

    before(async () => {
      smtp = new SMTPServer({
        authOptional: true,
        disabledCommands: ['STARTTLS'],
        onData(stream, session, callback) {
          let data = '';
          stream.on('data', (chunk: Buffer) => (data += chunk.toString()));
          stream.on('end', () => {
            mails.push({ to: session.envelope.rcptTo.map((r) => r.address), data });
            callback();
          });
        },
      });
      await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
      service = await startService(dialect.name, { smtpUrl: `smtp://127.0.0.1:${(smtp.server.address() as AddressInfo).port}`, smtpFrom: 'reports@iotbridge.test' });
      tenant = await createAccount(service, 'report-mail');
      other = await createAccount(service, 'report-mail-other');
    });

    after(async () => {
      await service?.stop();
      await new Promise<void>((resolve) => smtp.close(() => resolve()));
    });

    it('stores a daily schedule with its next mailing; the mailing carries the period that ended, once', async () => {
      const created = await service.request('POST', '/reports', {
        token: tenant.token,
        body: { name: 'energy', schedule: { every: 'day', at: '06:00', recipients: ['ops@example.com', 'ops@example.com', 'boss@example.com'], bom: true } },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const next = Date.parse(created.body.nextSendAt);
      assert.equal(new Date(next).toISOString().slice(11), '06:00:00.000Z');
      assert.ok(next > Date.now() && next <= Date.now() + DAY);
      assert.deepEqual(created.body.schedule, { every: 'day', at: '06:00', weekday: 1, recipients: ['ops@example.com', 'boss@example.com'], bom: true });
      assert.equal(created.body.lastSentAt, null);

      // Entries of the day before the next mailing (two, one with a comma and a quote), one older, one after.
      await publish(next - DAY - 1000, 'before', 1);
      await publish(next - DAY + 1000, 'm-1', 2.5);
      await publish(next - 1000, 'm-2, "north"', 3);
      await publish(next + 1000, 'after', 4);

      // The clock of the check is moved to a minute after the mailing is due; two checks at once send it once.
      const { reportMailer } = service.bridge.domain;
      await Promise.all([reportMailer.check(next + 60_000), reportMailer.check(next + 60_000)]);
      const mail = await waitFor(async () => mails.find((m) => m.data.includes('Report energy')), 'the scheduled mail');
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(mails.length, 1, 'sent once');
      assert.deepEqual(mail.to.sort(), ['boss@example.com', 'ops@example.com']);
      const file = attachment(mail);
      assert.equal(file.filename, `energy-${new Date(next - DAY).toISOString().slice(0, 10)}.csv`);
      assert.equal(file.text.charCodeAt(0), 0xfeff, 'the BOM the schedule asked for');
      const rows = parse<Record<string, string>>(file.text.slice(1), { columns: true });
      assert.deepEqual(rows.map((row) => [row.meter, row.kwh]), [['m-1', '2.5'], ['m-2, "north"', '3']]);
      assert.match(mail.data, /2 entries of report "energy"/);

      const after = (await service.request('GET', '/reports/energy', { token: tenant.token })).body;
      assert.equal(Date.parse(after.nextSendAt), next + DAY);
      assert.equal(Date.parse(after.lastSentAt), next + 60_000);
    });

    it('keeps the schedule and its next mailing across a restart; null stops it', async () => {
      const before = (await service.request('GET', '/reports/energy', { token: tenant.token })).body;
      service = await service.restart();
      const after = (await service.request('GET', '/reports/energy', { token: tenant.token })).body;
      assert.deepEqual([after.schedule, after.nextSendAt, after.lastSentAt], [before.schedule, before.nextSendAt, before.lastSentAt]);
      const weekly = await service.request('PATCH', '/reports/energy', { token: tenant.token, body: { schedule: { every: 'week', weekday: 7, at: '23:30', recipients: ['ops@example.com'] } } });
      assert.equal(weekly.status, 200, JSON.stringify(weekly.body));
      const sunday = new Date(weekly.body.nextSendAt);
      assert.deepEqual([sunday.getUTCDay(), sunday.toISOString().slice(11, 16)], [0, '23:30']);
      const stopped = await service.request('PATCH', '/reports/energy', { token: tenant.token, body: { schedule: null } });
      assert.deepEqual([stopped.body.schedule, stopped.body.nextSendAt], [null, null]);
    });

    it('mails a report now, for the period and recipients asked', async () => {
      const count = mails.length;
      const now = Date.now();
      await service.request('POST', '/reports', { token: tenant.token, body: { name: 'now-report' } });
      await service.request('POST', '/reports/now-report/entries', { token: tenant.token, body: { data: { a: 1 } } });
      const sent = await service.request('POST', '/reports/now-report/mail', { token: tenant.token, body: { recipients: ['me@example.com'] } });
      assert.equal(sent.status, 200, JSON.stringify(sent.body));
      assert.deepEqual([sent.body.recipients, sent.body.rows, sent.body.truncated], [['me@example.com'], 1, false]);
      assert.ok(Date.parse(sent.body.to) >= now);
      const mail = await waitFor(async () => (mails.length > count ? mails.at(-1) : undefined), 'the mail sent now');
      const rows = parse<Record<string, string>>(attachment(mail).text, { columns: true });
      assert.deepEqual(rows.map((row) => row.a), ['1']);

      const empty = await service.request('POST', '/reports/now-report/mail', { token: tenant.token, body: { recipients: ['me@example.com'], from: new Date(now - 2 * DAY).toISOString(), to: new Date(now - DAY).toISOString() } });
      assert.equal(empty.body.rows, 0);
      assertError(await service.request('POST', '/reports/now-report/mail', { token: tenant.token, body: {} }), 400, 'IOTB_REQUEST_VALIDATION', 'no schedule, no recipients');
    });

    it('refuses bad schedules and other accounts', async () => {
      const bad: unknown[] = [
        { every: 'fortnight', recipients: ['a@b.c'] },
        { every: 'day', at: '25:00', recipients: ['a@b.c'] },
        { every: 'week', weekday: 8, recipients: ['a@b.c'] },
        { every: 'day', recipients: [] },
        { every: 'day', recipients: ['not an address'] },
        { every: 'day' },
      ];
      for (const schedule of bad) {
        assertError(await service.request('POST', '/reports', { token: tenant.token, body: { name: 'bad', schedule } }), 400, 'IOTB_REQUEST_VALIDATION', JSON.stringify(schedule));
      }
      assertError(await service.request('POST', '/reports/now-report/mail', { token: other.token, body: { recipients: ['x@example.com'] } }), 404, 'IOTB_REPORT_NOT_FOUND', 'another account mails it');
      assertError(await service.request('PATCH', '/reports/now-report', { token: other.token, body: { schedule: { every: 'day', recipients: ['x@example.com'] } } }), 404, 'IOTB_REPORT_NOT_FOUND', 'another account schedules it');
    });
  });
}

describe('scheduled reports without an SMTP server', () => {
  let service: TestService;
  let tenant: TestAccount;

  before(async () => {
    service = await startService('sqlite');
    tenant = await createAccount(service, 'no-mail');
  });

  after(() => service?.stop());

  it('refuses a schedule and a mailing with IOTB_EMAIL_NOT_CONFIGURED; a report without a schedule is fine', async () => {
    assertError(await service.request('POST', '/reports', { token: tenant.token, body: { name: 'r', schedule: { every: 'day', recipients: ['a@example.com'] } } }), 409, 'IOTB_EMAIL_NOT_CONFIGURED', 'a schedule');
    assert.equal((await service.request('POST', '/reports', { token: tenant.token, body: { name: 'r' } })).status, 201);
    assertError(await service.request('POST', '/reports/r/mail', { token: tenant.token, body: { recipients: ['a@example.com'] } }), 409, 'IOTB_EMAIL_NOT_CONFIGURED', 'mail now');
  });
});
