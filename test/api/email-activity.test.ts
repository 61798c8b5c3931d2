import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { SMTPServer } from 'smtp-server';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { runScript } from '../helpers/scripts.js';
import { startService, type TestService } from '../helpers/service.js';

interface Received {
  readonly from: string;
  readonly to: string[];
  readonly data: string;
}

describe('script namespaces: email (against a real SMTP server), activity, endpoint.attach', () => {
  let smtp: SMTPServer;
  const received: Received[] = [];
  let service: TestService;
  let account: TestAccount;

  before(async () => {
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      onData(stream, session, callback) {
        let data = '';
        stream.on('data', (chunk: Buffer) => (data += chunk.toString()));
        stream.on('end', () => {
          received.push({ from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '', to: session.envelope.rcptTo.map((r) => r.address), data });
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
    const port = (smtp.server.address() as AddressInfo).port;
    service = await startService('sqlite', { smtpUrl: `smtp://127.0.0.1:${port}`, smtpFrom: 'alerts@iotbridge.test' });
    account = await createAccount(service, 'mail');
  });
  after(async () => {
    await service?.stop();
    await new Promise<void>((resolve) => smtp.close(() => resolve()));
  });

  it('sends mail with a table as a CSV attachment', async () => {
    const result = await runScript(service, account.token, `
      var r = email.send({ to: ['ops@example.com'], subject: 'Daily report', text: 'See attached.', table: { name: 'readings', columns: ['device', 'value', 'note'], rows: [['dev-1', 21.5, 'ok'], ['dev-2', 19, 'has, comma']] } });
      log(typeof r.messageId);
      try { email.send({ to: 'not-an-address', subject: 'x', text: 'y' }); } catch (e) { log(e.message); }
    `);
    assert.equal(result.status, 'success', `${result.error} line ${result.line}`);
    assert.deepEqual(result.logs, ['string', 'email.send: to is an email address or a list of 1 to 20']);
    assert.equal(received.length, 1);
    const mail = received[0]!;
    assert.deepEqual([mail.from, mail.to], ['alerts@iotbridge.test', ['ops@example.com']]);
    assert.match(mail.data, /Subject: Daily report/);
    assert.match(mail.data, /filename=readings\.csv/);
    const csv = /Content-Type: text\/csv[\s\S]*?\r\n\r\n([\s\S]*?)\r\n--/.exec(mail.data)?.[1] ?? '';
    const decoded = /base64/i.test(mail.data.split('text/csv')[1]?.slice(0, 200) ?? '') ? Buffer.from(csv.replace(/\s+/g, ''), 'base64').toString() : csv;
    assert.equal(decoded, 'device,value,note\r\ndev-1,21.5,ok\r\ndev-2,19,"has, comma"\r\n');
  });

  it('sends at most 100 mails per account and hour, and a script cannot reset the count', async () => {
    const sender = await createAccount(service, 'mail-loop');
    // The count is per clock hour: a run that crossed the hour would start counting again (seen on CI at 23:59).
    const toNextHour = 3_600_000 - (Date.now() % 3_600_000);
    if (toNextHour < 30_000) await new Promise((resolve) => setTimeout(resolve, toNextHour + 100));
    const before = received.length;
    const result = await runScript(service, sender.token, `
      var hour = Math.floor(Date.now() / 3600000);
      for (var i = 0; i < 100; i++) {
        email.send({ to: 'ops@example.com', subject: 'n' + i, text: 'x' });
        // Where the count was kept before: the account's own cache.
        cache.delete('\\u0001email\\u0001' + hour);
      }
      try { email.send({ to: 'ops@example.com', subject: 'one more', text: 'x' }); } catch (e) { log(e.message); }
    `);
    assert.equal(result.status, 'success', `${result.error} line ${result.line}`);
    assert.deepEqual(result.logs, ['email.send: this account sent 100 mails this hour; try later']);
    assert.equal(received.length - before, 100);
    const other = await runScript(service, account.token, `email.send({ to: 'ops@example.com', subject: 'still', text: 'x' }); log('sent');`);
    assert.deepEqual(other.logs, ['sent'], "another account's count is its own");
  });

  it('lists recent activity and moves an endpoint to another service', async () => {
    const first = await createService(service, account.token, { name: 'first' });
    const second = await createService(service, account.token, { name: 'second', type: 'coap' });
    await createEndpoint(service, account.token, { key: 'mover', serviceId: first });
    const result = await runScript(service, account.token, `
      var a = activity.getAll({ limit: 10 });
      log(a.length > 0, a[0].kind, a.every(function (x) { return x.time && x.id; }));
      var e = endpoint.attach('k.mover', '${second}');
      log(e.serviceId === '${second}');
      try { endpoint.attach('k.mover', 'not-mine'); } catch (err) { log(err.message); }
    `);
    assert.equal(result.status, 'success', `${result.error} line ${result.line}`);
    assert.deepEqual(result.logs, ['true event true', 'true', 'endpoint.attach: No such service']);
  });
});
