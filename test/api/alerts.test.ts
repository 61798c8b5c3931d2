// Issue 20, alerts: the rule shape; an event crossing it opens an alert that notifies a local webhook
// receiver (signature checked) and an SMTP test server and emits an `alert` event; further crossings count on
// the same alert; it is acknowledged over the API and closes by itself when an event no longer crosses; search
// by tag, state, severity and endpoint; bad input and cross-tenant answers.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { SMTPServer } from 'smtp-server';
import { waitFor } from '../helpers/devices.js';
import { assertError, createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

interface Hook {
  readonly event: string;
  readonly signature: string;
  readonly body: string;
}

const SECRET = 'webhook-secret-0123456789';

for (const dialect of DIALECTS) {
  describe(`alerts (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let tenant: TestAccount;
    let other: TestAccount;
    let smtp: SMTPServer;
    let receiver: Server;
    let ruleId: string;
    let alertId: string;
    const mails: Array<{ to: string[]; data: string }> = [];
    const hooks: Hook[] = [];

    const reading = async (key: string, temperature: number) => {
      const posted = await service.request('POST', '/events', { token: tenant.token, body: { type: 'reading', endpoint: `k.${key}`, data: { temperature } } });
      assert.equal(posted.status, 202, JSON.stringify(posted.body));
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
      receiver = createServer((request, response) => {
        let body = '';
        request.on('data', (chunk: Buffer) => (body += chunk.toString()));
        request.on('end', () => {
          hooks.push({ event: String(request.headers['x-iotbridge-event']), signature: String(request.headers['x-iotbridge-signature']), body });
          response.writeHead(204).end();
        });
      });
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
      service = await startService(dialect.name, {
        smtpUrl: `smtp://127.0.0.1:${(smtp.server.address() as AddressInfo).port}`,
        smtpFrom: 'alerts@iotbridge.test',
        outboundAllow: ['127.0.0.1/32'],
      });
      tenant = await createAccount(service, 'alerts');
      other = await createAccount(service, 'alerts-other');
      const serviceId = await createService(service, tenant.token, { name: 'cold chain', type: 'http' });
      for (const key of ['fridge-1', 'fridge-2']) await createEndpoint(service, tenant.token, { key, serviceId });
    });

    after(async () => {
      await service?.stop();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
      await new Promise<void>((resolve) => smtp.close(() => resolve()));
    });

    it('creates the issue’s rule; the webhook secret is never shown', async () => {
      const created = await service.request('POST', '/alert-rules', {
        token: tenant.token,
        body: {
          name: 'fridge too warm',
          severity: 'major',
          tags: ['cold-chain', 'site:hamburg'],
          condition: { type: 'threshold', event: 'reading', field: 'data.temperature', op: '>', value: 8 },
          notify: { email: ['ops@example.com'], webhook: { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/alerts`, secret: SECRET } },
        },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      ruleId = created.body.id;
      assert.deepEqual(created.body.notify.webhook, { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/alerts`, hasSecret: true });
      const listed = await service.request('GET', '/alert-rules?tag=cold-chain', { token: tenant.token });
      assert.deepEqual(listed.body.items.map((rule: { id: string }) => rule.id), [ruleId]);
      assert.ok(!JSON.stringify(listed.body).includes(SECRET));
    });

    it('opens an alert on a crossing event: listed by tag and state, notified by webhook (signed), e-mail and an alert event', async () => {
      await reading('fridge-1', 5);
      await reading('fridge-1', 9.5);
      const open = await waitFor(async () => {
        const found = await service.request('GET', '/alerts?tag=cold-chain&state=open', { token: tenant.token });
        return found.body.items.length === 1 ? found.body.items[0] : undefined;
      }, 'the alert opened');
      alertId = open.id;
      assert.deepEqual([open.name, open.severity, open.endpointKey, open.value, open.occurrences, open.tags], ['fridge too warm', 'major', 'fridge-1', 9.5, 1, ['cold-chain', 'site:hamburg']]);

      const hook = await waitFor(async () => hooks.find((h) => h.event === 'alert.opened'), 'the webhook call');
      const [t, v1] = hook.signature.split(',').map((part) => part.split('=')[1]);
      assert.equal(v1, createHmac('sha256', SECRET).update(`${t}.${hook.body}`).digest('hex'), 'signed with the rule’s secret');
      assert.equal(JSON.parse(hook.body).alert.id, alertId);
      const mail = await waitFor(async () => mails.find((m) => m.data.includes('fridge too warm')), 'the e-mail');
      assert.deepEqual(mail.to, ['ops@example.com']);
      assert.match(mail.data, /\[major\] fridge too warm on fridge-1: opened/);
      const events = await service.request('GET', '/history?type=alert', { token: tenant.token });
      assert.equal(events.body.items[0].data.transition, 'opened');

      // Another crossing counts on the same alert; another endpoint gets its own.
      await reading('fridge-1', 11);
      await reading('fridge-2', 12);
      await waitFor(async () => ((await service.request('GET', `/alerts/${alertId}`, { token: tenant.token })).body.occurrences === 2 ? true : undefined), 'a second occurrence');
      const both = await waitFor(async () => {
        const found = await service.request('GET', '/alerts?state=open&severity=major', { token: tenant.token });
        return found.body.total === 2 ? found.body.items : undefined;
      }, 'one alert per endpoint');
      assert.deepEqual(both.map((alert: { endpointKey: string }) => alert.endpointKey).sort(), ['fridge-1', 'fridge-2']);
      const byEndpoint = await service.request('GET', '/alerts?endpoint=k.fridge-2', { token: tenant.token });
      assert.equal(byEndpoint.body.total, 1);
    });

    it('is acknowledged over the API, then closes by itself when the temperature is back', async () => {
      const acknowledged = await service.request('PATCH', `/alerts/${alertId}`, { token: tenant.token, body: { state: 'acknowledged', note: 'technician on the way' } });
      assert.equal(acknowledged.status, 200, JSON.stringify(acknowledged.body));
      assert.equal(acknowledged.body.state, 'acknowledged');
      await waitFor(async () => hooks.find((h) => h.event === 'alert.acknowledged'), 'the acknowledgement notified');
      assertError(await service.request('PATCH', `/alerts/${alertId}`, { token: tenant.token, body: { state: 'open' } }), 400, 'IOTB_REQUEST_VALIDATION', 'open is not a state to set');

      await reading('fridge-1', 4);
      const closed = await waitFor(async () => {
        const alert = (await service.request('GET', `/alerts/${alertId}`, { token: tenant.token })).body;
        return alert.state === 'closed' ? alert : undefined;
      }, 'the alert closed by the rule');
      assert.deepEqual(closed.history.map((change: { state: string; by: string }) => `${change.state} ${change.by === 'rule' ? 'rule' : 'person'}`), ['open rule', 'acknowledged person', 'closed rule']);
      assert.equal(closed.history[1].note, 'technician on the way');
      await waitFor(async () => hooks.find((h) => h.event === 'alert.closed'), 'the close notified');
      assertError(await service.request('PATCH', `/alerts/${alertId}`, { token: tenant.token, body: { state: 'acknowledged' } }), 409, 'IOTB_ALERT_STATE', 'a closed alert stays closed');

      // A new crossing after the close opens a new alert.
      await reading('fridge-1', 10);
      await waitFor(async () => ((await service.request('GET', '/alerts?endpoint=k.fridge-1', { token: tenant.token })).body.total === 2 ? true : undefined), 'a second alert');
    });

    it('refuses bad rules with the field named', async () => {
      const cases: Array<[Record<string, unknown>, string, number]> = [
        [{ type: 'threshold', event: 'reading', field: 'data.temperature', op: '>', value: 'warm' }, 'condition.op', 400],
        [{ type: 'threshold', event: 'reading', field: 'data..x', op: '>', value: 1 }, 'condition.field', 400],
      ];
      for (const [condition, field] of cases) {
        const refused = await service.request('POST', '/alert-rules', { token: tenant.token, body: { name: 'bad', severity: 'minor', condition } });
        assertError(refused, 400, 'IOTB_REQUEST_VALIDATION', field);
        assert.equal(refused.body.error.details.field, field);
      }
      assertError(await service.request('POST', '/alert-rules', { token: tenant.token, body: { name: 'bad', severity: 'urgent', condition: { type: 'threshold', event: 'x', field: 'data.x', op: '>', value: 1 } } }), 400, 'IOTB_REQUEST_VALIDATION', 'severity');
      const refusedHook = await service.request('POST', '/alert-rules', {
        token: tenant.token,
        body: { name: 'bad', severity: 'minor', condition: { type: 'threshold', event: 'x', field: 'data.x', op: '>', value: 1 }, notify: { webhook: { url: 'http://169.254.169.254/', secret: SECRET } } },
      });
      assertError(refusedHook, 403, 'IOTB_OUTBOUND_ADDRESS_REFUSED', 'a link-local webhook');
      assertError(await service.request('POST', '/alert-rules', { token: tenant.token, body: { name: 'bad', severity: 'minor', condition: { type: 'threshold', event: 'x', field: 'data.x', op: '>', value: 1 }, notify: { webhook: { url: 'http://127.0.0.1:1/', secret: 'short' } } } }), 400, 'IOTB_REQUEST_VALIDATION', 'a short secret');
    });

    it("another account neither sees nor changes the tenant's rules and alerts, and its events open none of them", async () => {
      for (const [method, url, body] of [
        ['GET', `/alert-rules/${ruleId}`, undefined],
        ['PUT', `/alert-rules/${ruleId}`, { name: 'x', severity: 'info', condition: { type: 'threshold', event: 'reading', field: 'data.temperature', op: '>', value: 100 } }],
        ['DELETE', `/alert-rules/${ruleId}`, undefined],
      ] as const) {
        assertError(await service.request(method, url, { token: other.token, body }), 404, 'IOTB_ALERT_RULE_NOT_FOUND', `${method} ${url}`);
      }
      assertError(await service.request('GET', `/alerts/${alertId}`, { token: other.token }), 404, 'IOTB_ALERT_NOT_FOUND', 'get');
      assertError(await service.request('PATCH', `/alerts/${alertId}`, { token: other.token, body: { state: 'closed' } }), 404, 'IOTB_ALERT_NOT_FOUND', 'patch');
      assert.deepEqual((await service.request('GET', '/alerts', { token: other.token })).body.items, []);
      assert.deepEqual((await service.request('GET', '/alert-rules', { token: other.token })).body.items, []);
      const before = (await service.request('GET', '/alerts', { token: tenant.token })).body.total;
      const otherService = await createService(service, other.token, { name: 'x', type: 'http' });
      await createEndpoint(service, other.token, { key: 'oven', serviceId: otherService });
      await service.request('POST', '/events', { token: other.token, body: { type: 'reading', endpoint: 'k.oven', data: { temperature: 250 } } });
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal((await service.request('GET', '/alerts', { token: tenant.token })).body.total, before, "the tenant's rule does not see the other account's events");
      assert.deepEqual((await service.request('GET', '/alerts', { token: other.token })).body.items, []);
    });
  });
}
