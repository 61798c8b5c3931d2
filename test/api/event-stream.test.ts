// Issue 18: live events over Server-Sent Events (`GET /events/stream`).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { createEvent } from '../../src/events/event.js';
import type { EventStore } from '../../src/events/event-store.js';
import { EVENT_STREAM_REPLAY_MAX, EventStreams, type EventStream } from '../../src/events/event-streams.js';
import { openDatabase } from '../../src/store/database.js';
import { SqlEventStore } from '../../src/store/event-store.js';
import { UdpDevice, until } from '../helpers/devices.js';
import { assertError, createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';
import { SseClient, SseParser } from '../helpers/sse.js';

/** Opens `GET /events/stream` with a bearer token; fails on anything but a stream. */
async function stream(service: TestService, token: string, query = '', headers: Record<string, string> = {}): Promise<SseClient> {
  const opened = await SseClient.open(`${service.baseUrl}/events/stream${query}`, { authorization: `Bearer ${token}`, ...headers });
  assert.ok(opened instanceof SseClient, `expected a stream: ${JSON.stringify('body' in opened ? opened.body : undefined)}`);
  return opened;
}

/** Posts a custom event; returns it as the answer gives it. */
async function post(service: TestService, token: string, body: Record<string, unknown>): Promise<any> {
  const posted = await service.request('POST', '/events', { token, body });
  assert.equal(posted.status, 202, JSON.stringify(posted.body));
  return posted.body;
}

/** The account's events of these types, oldest first, as `GET /history` gives them. */
async function historyOf(service: TestService, token: string, types: string[]): Promise<any[]> {
  const items: any[] = [];
  let next: string | null = null;
  do {
    const query: string = `/history?${types.map((t) => `type=${encodeURIComponent(t)}`).join('&')}&limit=1000${next ? `&next=${next}` : ''}`;
    const page = await service.request('GET', query, { token });
    assert.equal(page.status, 200, JSON.stringify(page.body));
    items.push(...page.body.items);
    next = page.body.next;
  } while (next);
  return items.reverse();
}

/**
 * A stream over a plain socket: it can stop reading (`pause`), so that what the service writes piles up in the
 * kernel's buffers, then in the service; and it can go away at once (`destroy`). The fetch clients are never
 * aborted: undici then opens a spare connection that sends no request, and a server that is closing waits
 * for such connections (Node stops its headers timeout at close), here ~70 s.
 */
class RawStream {
  readonly socket: net.Socket;
  readonly #chunks: Buffer[] = [];
  readonly closed: Promise<void>;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => this.#chunks.push(chunk));
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
  }

  static async open(service: TestService, token: string, query: string, options: { pause?: boolean } = {}): Promise<RawStream> {
    const socket = net.connect(service.ports.http!, '127.0.0.1');
    const client = new RawStream(socket);
    socket.write(`GET /events/stream${query} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nAccept: text/event-stream\r\n\r\n`);
    await until(() => client.text.includes(': connected'), 'the stream to start');
    if (options.pause) socket.pause();
    return client;
  }

  destroy(): void {
    this.socket.destroy();
  }

  get text(): string {
    return Buffer.concat(this.#chunks).toString();
  }

  /** Reads on until the response ends (its last chunk, HTTP/1.1 7.1) or the connection closes. */
  async readToEnd(): Promise<{ head: string; parser: SseParser }> {
    this.socket.resume();
    const ended = () => Buffer.concat(this.#chunks).includes('\r\n0\r\n\r\n');
    await Promise.race([this.closed, until(ended, 'the end of the response', 10_000)]);
    const raw = Buffer.concat(this.#chunks);
    const split = raw.indexOf('\r\n\r\n');
    const body: Buffer[] = [];
    // The body is chunked: `<size in hex>\r\n<bytes>\r\n`, ending with a chunk of size 0.
    for (let at = split + 4; ; ) {
      const line = raw.indexOf('\r\n', at);
      const size = line === -1 ? 0 : Number.parseInt(raw.subarray(at, line).toString(), 16);
      if (!(size > 0)) break;
      body.push(raw.subarray(line + 2, line + 2 + size));
      at = line + 2 + size + 2;
    }
    const parser = new SseParser();
    parser.push(Buffer.concat(body).toString());
    return { head: raw.subarray(0, split).toString(), parser };
  }
}

for (const dialect of DIALECTS) {
  describe(`live event stream (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let account: TestAccount;
    let serviceId: string;
    let sensor1: string;
    let sensor2: string;
    // Streams stay open until the service stops (see RawStream); they are many.
    const opened = stream;

    before(async () => {
      service = await startService(dialect.name, { eventStreamsPerAccount: 100 });
      account = await createAccount(service, 'streams');
      serviceId = await createService(service, account.token);
      sensor1 = (await createEndpoint(service, account.token, { key: 'sensor-1', serviceId })).id;
      sensor2 = (await createEndpoint(service, account.token, { key: 'sensor-2', serviceId })).id;
    });
    after(() => service?.stop());

    it('streams posted events as they are accepted, in order, each as GET /history gives it', async () => {
      const client = await opened(service, account.token);
      assert.match(client.response.headers.get('content-type') ?? '', /^text\/event-stream/);
      assert.equal(client.response.headers.get('cache-control'), 'no-cache, no-transform');
      const posted = [];
      for (let n = 0; n < 6; n++) posted.push(await post(service, account.token, { type: n % 2 ? 'odd' : 'even', ...(n % 3 ? { endpoint: 'k.sensor-1' } : {}), data: { n, nested: { list: [1, 'two', null] } } }));
      const received = await client.take(6);
      assert.deepEqual(received.map((e) => e.id), posted.map((e) => e.id), 'in the order they were accepted');
      for (const event of received) assert.deepEqual(event, (await service.request('GET', `/history/${event.id}`, { token: account.token })).body, 'the shape of a /history item');
      const messages = client.messages.filter((m) => m.event === 'event');
      assert.deepEqual(messages.map((m) => m.id), posted.map((e) => e.id), 'id: is the event id');
      assert.equal(client.parser.retry, 5000);
      assert.ok(client.parser.comments.includes('connected'));
    });

    it('streams device events: a UDP datagram', async () => {
      const udp = await createService(service, account.token, { name: 'udp', type: 'udp' });
      const meter = await createEndpoint(service, account.token, { key: 'meter-1', serviceId: udp });
      const client = await opened(service, account.token, '?endpoint=k.meter-1&type=udp-message');
      const device = await UdpDevice.open(service.ports.udp!);
      try {
        await device.send('meter-1:21.5C');
        const [event] = await client.take(1);
        assert.equal(event.endpointId, meter.id);
        assert.equal(event.data.text, '21.5C');
        assert.deepEqual(event, (await service.request('GET', `/history/${event.id}`, { token: account.token })).body);
      } finally {
        device.close();
      }
    });

    it('filters by endpoint (repeatable, id or k.<key>) and by type (repeatable)', async () => {
      const byEndpoint = await opened(service, account.token, `?endpoint=k.sensor-1&endpoint=${sensor2}`);
      const byType = await opened(service, account.token, '?type=alpha&type=beta');
      const both = await opened(service, account.token, '?endpoint=k.sensor-2&type=beta');
      const posted = [
        await post(service, account.token, { type: 'alpha', endpoint: 'k.sensor-1' }),
        await post(service, account.token, { type: 'gamma', endpoint: 'k.sensor-2' }),
        await post(service, account.token, { type: 'beta' }),
        await post(service, account.token, { type: 'beta', endpoint: 'k.sensor-2' }),
        await post(service, account.token, { type: 'gamma' }),
      ];
      // One last event every stream follows: each has had everything before it.
      const last = await post(service, account.token, { type: 'beta', endpoint: 'k.sensor-2' });
      for (const client of [byEndpoint, byType, both]) await client.until((c) => c.events.some((e) => e.id === last.id), 'the last event');
      const ids = (client: SseClient) => client.events.map((e) => e.id);
      assert.deepEqual(ids(byEndpoint), [posted[0].id, posted[1].id, posted[3].id, last.id]);
      assert.deepEqual(ids(byType), [posted[0].id, posted[2].id, posted[3].id, last.id]);
      assert.deepEqual(ids(both), [posted[3].id, last.id]);
    });

    it("keeps accounts apart: another account, a sub-account and its parent each see only their own events", async () => {
      const parent = await createAccount(service, 'parent');
      const child = await createAccount(service, 'child', { token: parent.token, parentId: parent.accountId });
      const sibling = await createAccount(service, 'sibling', { token: parent.token, parentId: parent.accountId });
      const streams = {
        parent: await opened(service, parent.token),
        parentAsChild: await opened(service, `${parent.token}:${child.accountId}`),
        child: await opened(service, child.token),
        sibling: await opened(service, sibling.token),
        other: await opened(service, account.token, '?type=secret&type=done'),
      };
      const secrets = {
        parent: await post(service, parent.token, { type: 'secret', data: 'parent' }),
        child: await post(service, child.token, { type: 'secret', data: 'child' }),
        childByParent: (await service.request('POST', '/events', { token: parent.token, account: child.accountId, body: { type: 'secret', data: 'child, posted by the parent' } })).body,
        sibling: await post(service, sibling.token, { type: 'secret', data: 'sibling' }),
      };
      const done = {
        parent: await post(service, parent.token, { type: 'done' }),
        child: await post(service, child.token, { type: 'done' }),
        sibling: await post(service, sibling.token, { type: 'done' }),
        other: await post(service, account.token, { type: 'done' }),
      };
      const seen = async (client: SseClient, last: { id: string }) => {
        await client.until((c) => c.events.some((e) => e.id === last.id), 'the done event');
        return client.events.map((e) => e.id);
      };
      assert.deepEqual(await seen(streams.parent, done.parent), [secrets.parent.id, done.parent.id], "the parent's stream: not its sub-accounts' events");
      assert.deepEqual(await seen(streams.parentAsChild, done.child), [secrets.child.id, secrets.childByParent.id, done.child.id], 'acting in the sub-account: its events');
      assert.deepEqual(await seen(streams.child, done.child), [secrets.child.id, secrets.childByParent.id, done.child.id]);
      assert.deepEqual(await seen(streams.sibling, done.sibling), [secrets.sibling.id, done.sibling.id]);
      assert.deepEqual(await seen(streams.other, done.other), [done.other.id]);

      // Another account's endpoints, events and accounts are not reachable from a stream.
      assertError(await service.request('GET', `/events/stream?endpoint=${sensor1}`, { token: parent.token }), 404, 'IOTB_ENDPOINT_NOT_FOUND', "another account's endpoint");
      assertError(await service.request('GET', `/events/stream?since=${secrets.parent.id}`, { token: child.token }), 400, 'IOTB_EVENT_SINCE_UNKNOWN', "the parent's event as since");
      assertError(await service.request('GET', `/events/stream?since=${secrets.child.id}`, { token: parent.token }), 400, 'IOTB_EVENT_SINCE_UNKNOWN', "a sub-account's event as since");
      assertError(await service.request('GET', '/events/stream', { token: child.token, account: parent.accountId }), 403, 'IOTB_AUTH_ACCOUNT_FORBIDDEN', 'a sub-account token acting in its parent');
      assertError(await service.request('GET', '/events/stream', { token: child.token, account: sibling.accountId }), 403, 'IOTB_AUTH_ACCOUNT_FORBIDDEN', 'acting in a sibling');
    });

    it('answers bad requests with the one error body before any stream starts', async () => {
      const other = await createAccount(service, 'stranger');
      const strangerEvent = await post(service, other.token, { type: 'x' });
      const cases: [string, string | null, number, string][] = [
        ['/events/stream?endpoint=k.nope', account.token, 404, 'IOTB_ENDPOINT_NOT_FOUND'],
        [`/events/stream?endpoint=k.sensor-1&endpoint=nope`, account.token, 404, 'IOTB_ENDPOINT_NOT_FOUND'],
        ['/events/stream?since=nope', account.token, 400, 'IOTB_EVENT_SINCE_UNKNOWN'],
        [`/events/stream?since=${strangerEvent.id}`, account.token, 400, 'IOTB_EVENT_SINCE_UNKNOWN'],
        [`/events/stream?since=${'x'.repeat(65)}`, account.token, 400, 'IOTB_REQUEST_VALIDATION'],
        [`/events/stream?type=`, account.token, 400, 'IOTB_REQUEST_VALIDATION'],
        [`/events/stream?${Array.from({ length: 101 }, () => 'type=a').join('&')}`, account.token, 400, 'IOTB_REQUEST_VALIDATION'],
        ['/events/stream', null, 401, 'IOTB_AUTH_TOKEN_MISSING'],
        ['/events/stream', 'AT:not-a-token-of-ours', 401, 'IOTB_AUTH_TOKEN_INVALID'],
        [`/events/stream?access_token=AT:not-a-token-of-ours`, null, 401, 'IOTB_AUTH_TOKEN_INVALID'],
        // The query token is for the stream only.
        [`/history?access_token=${encodeURIComponent(account.token)}`, null, 401, 'IOTB_AUTH_TOKEN_MISSING'],
      ];
      for (const [url, token, status, code] of cases) {
        const response = await service.request('GET', url, { token, headers: { accept: 'text/event-stream' } });
        assertError(response, status, code, url);
        assert.match(response.headers.get('content-type') ?? '', /^application\/json/, url);
      }
      const badLastId = await service.request('GET', '/events/stream', { token: account.token, headers: { 'last-event-id': 'nope' } });
      assertError(badLastId, 400, 'IOTB_EVENT_SINCE_UNKNOWN', 'Last-Event-ID');
    });

    it('accepts the token as access_token (EventSource), the header first', async () => {
      const posted = await post(service, account.token, { type: 'query-token' });
      const viaQuery = await SseClient.open(`${service.baseUrl}/events/stream?type=query-token&since=${posted.id}&access_token=${encodeURIComponent(account.token)}`);
      assert.ok(viaQuery instanceof SseClient);
      const next = await post(service, account.token, { type: 'query-token' });
      assert.deepEqual((await viaQuery.take(1)).map((e) => e.id), [next.id]);
      const headerWins = await SseClient.open(`${service.baseUrl}/events/stream?access_token=${encodeURIComponent(account.token)}`, { authorization: 'Bearer AT:not-a-token-of-ours' });
      assert.ok(!(headerWins instanceof SseClient));
      assert.equal(headerWins.status, 401);
    });

    it('replays the events after Last-Event-ID (or since) from the history, then continues live: none missing, none twice', async () => {
      const earlier: any[] = [];
      for (let n = 0; n < 8; n++) earlier.push(await post(service, account.token, { type: 'replay', endpoint: n % 2 ? 'k.sensor-1' : 'k.sensor-2', data: { n } }));
      const byHeader = await opened(service, account.token, '?type=replay', { 'last-event-id': earlier[2].id });
      const bySince = await opened(service, account.token, `?type=replay&since=${earlier[2].id}`);
      const headerFirst = await opened(service, account.token, `?type=replay&since=${earlier[0].id}`, { 'last-event-id': earlier[5].id });
      const oneEndpoint = await opened(service, account.token, `?type=replay&endpoint=k.sensor-1&since=${earlier[0].id}`);
      const live = [await post(service, account.token, { type: 'replay', endpoint: 'k.sensor-1', data: { n: 8 } }), await post(service, account.token, { type: 'replay', data: { n: 9 } })];
      const all = [...earlier, ...live];
      assert.deepEqual((await byHeader.take(7)).map((e) => e.data.n), [3, 4, 5, 6, 7, 8, 9]);
      assert.deepEqual((await bySince.take(7)).map((e) => e.data.n), [3, 4, 5, 6, 7, 8, 9]);
      assert.deepEqual((await headerFirst.take(4)).map((e) => e.data.n), [6, 7, 8, 9], 'Last-Event-ID wins over since');
      assert.deepEqual((await oneEndpoint.take(5)).map((e) => e.data.n), [1, 3, 5, 7, 8]);
      assert.deepEqual(byHeader.events.map((e) => e.id), all.slice(3).map((e) => e.id));
      // Nothing after since: live only.
      const caughtUp = await opened(service, account.token, `?type=replay&since=${live[1].id}`);
      const more = await post(service, account.token, { type: 'replay', data: { n: 10 } });
      assert.deepEqual((await caughtUp.take(1)).map((e) => e.id), [more.id]);
    });

    it('joins replay and live without gaps or duplicates while events keep coming', async () => {
      const first = await post(service, account.token, { type: 'seam', data: { n: -1 } });
      let posted = 0;
      let stop = false;
      // Two writers, so events also commit in batches while the stream opens.
      const writers = [0, 1].map(async (w) => {
        while (!stop) {
          await post(service, account.token, { type: 'seam', data: { w, n: posted++ } });
        }
      });
      const clients: SseClient[] = [];
      for (let i = 0; i < 5; i++) {
        await until(() => posted >= (i + 1) * 5, 'more events');
        clients.push(await opened(service, account.token, `?type=seam&since=${first.id}`));
      }
      await until(() => posted >= 40, 'more events');
      stop = true;
      await Promise.all(writers);
      const last = await post(service, account.token, { type: 'seam', data: { last: true } });
      const expected = (await historyOf(service, account.token, ['seam'])).slice(1).map((e) => e.id);
      assert.equal(expected.at(-1), last.id);
      for (const client of clients) {
        await client.until((c) => c.events.some((e) => e.id === last.id), 'the last event');
        assert.deepEqual(client.events.map((e) => e.id), expected);
      }
    });

    it(`replays at most ${EVENT_STREAM_REPLAY_MAX} events: the newest, after a gap message naming where /history fills it`, async () => {
      const events = Array.from({ length: EVENT_STREAM_REPLAY_MAX + 100 }, (_, i) => createEvent({ type: 'bulk', accountId: account.accountId, data: { i } }));
      await service.bridge.bus.publish(events);
      const ordered = await historyOf(service, account.token, ['bulk']);
      assert.equal(ordered.length, events.length);
      const since = ordered[0];
      const client = await opened(service, account.token, `?type=bulk&since=${since.id}`);
      await client.take(EVENT_STREAM_REPLAY_MAX);
      const [gap, ...rest] = client.messages;
      assert.equal(gap?.event, 'gap');
      const notice = JSON.parse(gap.data) as { after: string; before: string; historyNext: string };
      const replayed = ordered.slice(-EVENT_STREAM_REPLAY_MAX);
      assert.deepEqual([notice.after, notice.before], [since.id, replayed[0].id]);
      assert.deepEqual(rest.map((m) => m.id), replayed.map((e) => e.id));
      // What the stream left out, from /history: newest first, down to (and past) `after`.
      const filled = await service.request('GET', `/history?type=bulk&limit=1000&next=${notice.historyNext}`, { token: account.token });
      const missing = ordered.slice(1, -EVENT_STREAM_REPLAY_MAX).reverse();
      assert.deepEqual(filled.body.items.slice(0, missing.length).map((e: { id: string }) => e.id), missing.map((e) => e.id));
      assert.equal(filled.body.items[missing.length].id, since.id);
    });

    it('works with the EventSource of a browser (Node\'s, token in access_token)', async () => {
      const url = `${service.baseUrl}/events/stream?type=es&access_token=${encodeURIComponent(account.token)}`;
      const script = `
        const es = new EventSource(process.env.STREAM_URL);
        es.onopen = () => console.log(JSON.stringify({ open: true }));
        es.addEventListener('event', (m) => console.log(JSON.stringify({ lastEventId: m.lastEventId, event: JSON.parse(m.data) })));
        es.onerror = () => console.log(JSON.stringify({ error: es.readyState }));`;
      const child = spawn(process.execPath, ['--experimental-eventsource', '--no-warnings', '-e', script], { env: { ...process.env, STREAM_URL: url }, stdio: ['ignore', 'pipe', 'inherit'] });
      const lines: any[] = [];
      createInterface({ input: child.stdout }).on('line', (line) => lines.push(JSON.parse(line)));
      try {
        await until(() => lines.some((l) => l.open), 'EventSource to open', 10_000);
        const posted = [await post(service, account.token, { type: 'es', data: 1 }), await post(service, account.token, { type: 'es', endpoint: 'k.sensor-1', data: 2 })];
        await until(() => lines.filter((l) => l.event).length >= 2, 'EventSource messages', 10_000);
        const got = lines.filter((l) => l.event);
        assert.deepEqual(got.map((l) => l.lastEventId), posted.map((e) => e.id));
        assert.deepEqual(got.map((l) => l.event), posted);
        assert.ok(!lines.some((l) => l.error !== undefined), JSON.stringify(lines));
      } finally {
        child.kill();
      }
    });
  });

  describe(`live event stream limits (${dialect.name})`, { skip: dialect.skip }, () => {
    const QUEUE_BYTES = 128 * 1024;
    let service: TestService;
    let account: TestAccount;
    let other: TestAccount;
    let stopped = false;
    const logs: string[] = [];

    before(async () => {
      service = await startService(dialect.name, { eventStreamsPerAccount: 2, eventStreamsMax: 3, eventStreamQueueBytes: QUEUE_BYTES }, { logLines: (line) => logs.push(line) });
      account = await createAccount(service, 'limits');
      other = await createAccount(service, 'limits-other');
    });
    after(() => (stopped ? undefined : service?.stop()));

    const streams = () => service.bridge.domain.eventStreams.stats;

    it('caps streams per account (429) and per process (503), before the stream starts; a closed stream frees its place', async () => {
      const a1 = await RawStream.open(service, account.token, '');
      const a2 = await RawStream.open(service, account.token, '');
      assertError(await service.request('GET', '/events/stream', { token: account.token }), 429, 'IOTB_EVENT_STREAMS_LIMIT', 'third stream of the account');
      const b1 = await RawStream.open(service, other.token, '');
      assertError(await service.request('GET', '/events/stream', { token: other.token }), 503, 'IOTB_EVENT_STREAMS_BUSY', 'fourth stream of the process');
      assert.equal(streams().open, 3);
      a1.destroy();
      await until(() => streams().open === 2, 'the closed stream to be let go');
      const b2 = await RawStream.open(service, other.token, '');
      const posted = await post(service, other.token, { type: 'capped' });
      await until(() => b2.text.includes(`id: ${posted.id}`) && b1.text.includes(`id: ${posted.id}`), 'the event on both streams of the account');
      assert.ok(!a2.text.includes(posted.id));
      for (const client of [a2, b1, b2]) client.destroy();
      await until(() => streams().open === 0, 'every stream to be let go');
    });

    it('cuts off a client that does not read (event: overflow), with memory bounded by the queue; Last-Event-ID then replays the rest', async () => {
      const marker = await post(service, account.token, { type: 'marker' });
      const stalled = await RawStream.open(service, account.token, '?type=big', { pause: true });
      assert.equal(streams().open, 1);
      const chunk = 'x'.repeat(40 * 1024);
      const posted: string[] = [];
      let largestQueue = 0;
      // The kernel's socket buffers take a few MB first; then the stream's queue fills and the client is cut off.
      while (streams().open > 0) {
        assert.ok(posted.length < 1000, 'the client was never cut off');
        posted.push((await post(service, account.token, { type: 'big', data: { n: posted.length, chunk } })).id);
        largestQueue = Math.max(largestQueue, streams().queuedBytes);
        assert.ok(streams().queuedBytes <= QUEUE_BYTES, `queued ${streams().queuedBytes} bytes`);
      }
      assert.ok(largestQueue > QUEUE_BYTES / 2, 'the queue filled before the cut');
      assert.equal(streams().queuedBytes, 0);
      const { head, parser } = await stalled.readToEnd();
      assert.match(head, /^HTTP\/1\.1 200/);
      const last = parser.messages.at(-1);
      assert.equal(last?.event, 'overflow', 'the last message says why the stream ended');
      const received = parser.messages.filter((m) => m.event === 'event').map((m) => m.id!);
      assert.ok(received.length < posted.length);
      assert.deepEqual(received, posted.slice(0, received.length), 'what came, came in order');
      assert.ok(logs.some((line) => line.includes('event stream cut off')));

      // Reconnecting as EventSource would: what it missed is replayed, then live events follow.
      const resumed = await stream(service, account.token, '?type=big', { 'last-event-id': received.at(-1) ?? marker.id });
      const next = await post(service, account.token, { type: 'big', data: { n: posted.length } });
      const rest = [...posted.slice(received.length), next.id];
      await resumed.until((c) => c.events.length >= rest.length, 'the missed events and the new one');
      assert.deepEqual(resumed.events.map((e) => e.id), rest);
    });

    it('never logs a token given in the query', async () => {
      const client = await SseClient.open(`${service.baseUrl}/events/stream?endpoint=k.nope&access_token=${encodeURIComponent(account.token)}`);
      assert.ok(!(client instanceof SseClient));
      assert.equal(client.status, 404);
      const secret = account.token.slice(3);
      assert.ok(logs.length > 0);
      assert.ok(!logs.some((line) => line.includes(secret)), 'no log line carries the token');
    });

    it('stops the service with streams open: reading and stalled clients are ended, stop() completes', async () => {
      const reading = await stream(service, account.token);
      const stalled = await RawStream.open(service, other.token, '', { pause: true });
      assert.ok(streams().open >= 2);
      await service.stop();
      stopped = true;
      await reading.done;
      assert.ok(reading.ended);
      await stalled.readToEnd();
      assert.equal(streams().open, 0);
    });
  });

  describe(`event streams: where the replay meets live events (${dialect.name})`, { skip: dialect.skip }, () => {
    it('events accepted while the replay is looked up, and right after, come once each and in order', async () => {
      const service = await startService(dialect.name);
      // The service's own store on a second connection, so that events can be accepted exactly around the replay's query.
      const database = openDatabase(service.bridge.config, pino({ level: 'silent' }));
      try {
        const account = await createAccount(service, 'seam');
        const { bus, domain } = service.bridge;
        const publish = (label: string, count: number) =>
          bus.publish(Array.from({ length: count }, (_, i) => createEvent({ type: 'seam', accountId: account.accountId, data: { label, i } })));
        const real = new SqlEventStore(database.db);
        let around = (label: string) => publish(label, 3);
        const store = new Proxy(real, {
          get(target, name, receiver) {
            if (name === 'seqsAfter') {
              return async (...args: Parameters<EventStore['seqsAfter']>) => {
                await around('before the query'); // committed before the replay is read: in the replay and live
                const seqs = await target.seqsAfter(...args);
                await around('after the query'); // only live
                return seqs;
              };
            }
            const value: unknown = Reflect.get(target, name, receiver);
            return typeof value === 'function' ? value.bind(target) : value;
          },
        });
        const streams = new EventStreams(bus, store, domain.endpoints, { perAccount: 10, max: 10, queueBytes: 1 << 20 });
        const scope = await domain.accounts.platformScope(account.accountId, 'test');
        await publish('history', 5);
        const history = await historyOf(service, account.token, ['seam']);
        const take = async (stream: EventStream, count: number) => {
          const got: string[] = [];
          while (got.length < count) {
            let timer: NodeJS.Timeout | undefined;
            const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`only ${got.length} of ${count} events came`)), 10_000)));
            const next = await Promise.race([stream.next(), timeout]).finally(() => clearTimeout(timer));
            assert.ok(next, `the stream ended after ${got.length} events`);
            got.push(next.id);
          }
          return got;
        };

        const fromSecond = await streams.open(scope, { since: history[1]!.id });
        await publish('live', 2);
        let expected = (await historyOf(service, account.token, ['seam'])).slice(2).map((e) => e.id);
        assert.equal(expected.length, 3 + 3 + 3 + 2);
        assert.deepEqual(await take(fromSecond, expected.length), expected);
        fromSecond.close();

        const withTypes = await streams.open(scope, { since: expected.at(-1), types: ['seam', 'other'] });
        await publish('live', 1);
        const all = await historyOf(service, account.token, ['seam']);
        expected = all.slice(all.findIndex((e) => e.id === expected.at(-1)) + 1).map((e) => e.id);
        assert.equal(expected.length, 3 + 3 + 1);
        assert.deepEqual(await take(withTypes, expected.length), expected);
        withTypes.close();
        assert.equal(streams.stats.open, 0);

        // By endpoint: the older events through the history's by-endpoint index, the newest from the events.
        const serviceId = await createService(service, account.token);
        const [e1, e2] = [(await createEndpoint(service, account.token, { key: 'e1', serviceId })).id as string, (await createEndpoint(service, account.token, { key: 'e2', serviceId })).id as string];
        const onEndpoints = (label: string, count: number) =>
          bus.publish(Array.from({ length: count }, (_, i) => createEvent({ type: 'seam', accountId: account.accountId, endpointId: i % 2 ? e2 : e1, data: { label, i } })));
        await onEndpoints('indexed', 6);
        const indexed = (await historyOf(service, account.token, ['seam'])).at(-1);
        const indexedSeq = (await real.seqOf(account.accountId, indexed.id))!;
        await until(async () => (await real.handledThrough()) >= indexedSeq, 'the events to be handled', 10_000);
        await real.indexEndpoints(100_000);
        await onEndpoints('newest', 4);
        around = (label) => onEndpoints(label, 4);
        const mark = (await historyOf(service, account.token, ['seam'])).find((e) => e.data.label === 'indexed');
        const byEndpoint = await streams.open(scope, { since: mark.id, endpoints: ['k.e1'] });
        const afterMark = await historyOf(service, account.token, ['seam']);
        expected = afterMark.slice(afterMark.findIndex((e) => e.id === mark.id) + 1).filter((e) => e.endpointId === e1).map((e) => e.id);
        assert.equal(expected.length, 2 + 2 + 2 + 2, 'indexed, around the query, and newest');
        assert.deepEqual(await take(byEndpoint, expected.length), expected);
        byEndpoint.close();
      } finally {
        await database.close();
        await service.stop();
      }
    });
  });
}
