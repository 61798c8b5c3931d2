// aedes-persistence's own conformance suite (abstract.js, v11), run against the project's MQTT persistence
// (DurablePersistence over SqlMqttSessionStore) on SQLite and on PostgreSQL, twice:
// - as aedes uses it in one process: every case must pass;
// - "restarted before every read": each read is answered by a new DurablePersistence loaded from the same database,
//   as after a restart. That is what the write-through is for; the cases that cannot hold there are listed below,
//   each with why.
// Then a few cases of what the abstract suite never does (a QoS 2 flow to its end, a restart between steps).
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { Aedes, AedesPublishPacket, Client } from 'aedes';
import type { AedesPacket } from 'aedes-packet';
import pg from 'pg';
import pino from 'pino';
import { DurablePersistence } from '../../src/mqtt/durable-persistence.js';
import { openDatabase, type Database } from '../../src/store/database.js';
import { migrateToLatest } from '../../src/store/migrate.js';
import { SqlMqttSessionStore } from '../../src/store/mqtt-session-store.js';
import { DIALECTS, throwAwayPostgres } from '../helpers/service.js';

// The suite is CommonJS without types: this is the one place its loose shapes come in.
type CaseBody = (t: unknown) => Promise<void>;
type AbstractOptions = { test: (name: string, body: CaseBody) => void; persistence: () => Promise<object>; testAsync: true };
const abstractPersistence = createRequire(import.meta.url)('aedes-persistence/abstract.js') as (options: AbstractOptions) => void;

// Why each case cannot hold after a restart (each checked against the code named).
const WIRE_FIELDS =
  'a retained message is restored as the store keeps a PUBLISH (topic, payload, qos, retain, dup: encode() in mqtt-session-store.ts); the case compares it with an extra `id` field and no `dup`';
const SUBSCRIPTION_OPTIONS =
  'subscriptions are stored as topic and QoS only (mqtt_subscriptions): No Local, Retain As Published and Retain Handling are not carried and subscription identifiers are refused (docs/mqtt.md "MQTT 5"; mqtt5-adapter.ts)';
const BYTES = 'payloads are stored as bytes (fromAedesPacket: Buffer.from): a string payload comes back as a Buffer; devices and mqtt.publish only ever give Buffers';
const RESENT_WITH_DUP =
  'a message sent before the restart is sent again with DUP set (MQTT-3.3.1-1; DurablePersistence.outgoingUpdate sets it on the packet the broker writes next): the pumped packet differs from the queued one by its dup flag';
const WILLS = 'wills are not stored: DurablePersistence keeps aedes\' in-memory putWill/getWill/delWill/streamWill, so none is left after a restart';

/** Abstract cases that cannot hold for a restarted broker, by design. */
const NOT_AFTER_RESTART: Readonly<Record<string, string>> = {
  'store and look up retained messages': WIRE_FIELDS,
  'look up retained messages with a # pattern': WIRE_FIELDS,
  'look up retained messages with a hello/world/# pattern': WIRE_FIELDS,
  'look up retained messages with a + pattern': WIRE_FIELDS,
  'look up retained messages with a + as first element': WIRE_FIELDS,
  'look up retained messages with +/#': WIRE_FIELDS,
  'look up retained messages with a + and # pattern with some in between': WIRE_FIELDS,
  'look up retained messages with multiple patterns': WIRE_FIELDS,
  'look up retained messages with multiple wildcard patterns': WIRE_FIELDS,
  'storing twice a retained message should keep only the last': WIRE_FIELDS,
  'Create a new packet while storing a retained message': WIRE_FIELDS,
  'store and look up subscriptions by client': SUBSCRIPTION_OPTIONS,
  'store and look up a subscription with an MQTT 5.0 subscription identifier': SUBSCRIPTION_OPTIONS,
  'remove subscriptions by client': SUBSCRIPTION_OPTIONS,
  'store and look up subscriptions by topic': SUBSCRIPTION_OPTIONS,
  'QoS 0 subscriptions, restored but not matched': SUBSCRIPTION_OPTIONS,
  'same topic, different QoS': SUBSCRIPTION_OPTIONS,
  'replace subscriptions': SUBSCRIPTION_OPTIONS,
  'replace subscriptions in same call': SUBSCRIPTION_OPTIONS,
  'add duplicate subs to persistence for qos > 0': SUBSCRIPTION_OPTIONS,
  'add duplicate subs to persistence for qos 0': SUBSCRIPTION_OPTIONS,
  'get topic list after concurrent subscriptions of a client': SUBSCRIPTION_OPTIONS,
  'add outgoing packet as a string and stream': BYTES,
  'add outgoing packet as a string and pump': RESENT_WITH_DUP,
  'store, fetch and delete will message': WILLS,
  'stream all will messages': WILLS,
  'stream all will message for unknown brokers': WILLS,
};

const logger = pino({ level: 'silent' });
const ACCOUNT = 'mqtt-contract';
/** The abstract suite's client ids; a broker's client id is its endpoint's id (mqtt-server.ts preConnect), which the tables reference. */
const CLIENT_IDS = ['abcde', 'abcdef', 'efghi', 'fghij', 'fghih', '12345', '42', '24', 'abc-123', 'subid-client'];
/** What `setup` needs of a broker: DurablePersistence and aedes' memory persistence only keep it. */
const BROKER = { id: 'broker-own', counter: 0 } as unknown as Aedes;

for (const dialect of DIALECTS) {
  // With CI set a missing PostgreSQL fails the file instead of skipping it.
  const skip = dialect.skip;
  describe(`MQTT persistence contract: DurablePersistence on ${dialect.name}`, { skip }, () => {
    let dataDir: string;
    let database: Database;
    let drop = async () => {};
    let store: SqlMqttSessionStore;
    let services = 0;

    before(async () => {
      dataDir = await mkdtemp(path.join(tmpdir(), 'iotbridge-mqtt-contract-'));
      let databaseUrl: string | undefined;
      if (dialect.name === 'postgres') {
        ({ url: databaseUrl, drop } = await throwAwayPostgres());
        // Durability against power loss is not what these cases test; waiting for each commit's flush made this file 3× slower.
        const client = new pg.Client({ connectionString: databaseUrl });
        await client.connect();
        await client.query(`alter database "${new URL(databaseUrl).pathname.slice(1)}" set synchronous_commit = off`).finally(() => client.end());
      }
      database = openDatabase({ dataDir, databaseUrl });
      await migrateToLatest(database);
      await database.db.insertInto('accounts').values({ id: ACCOUNT, name: ACCOUNT, parent_id: null, path: `/${ACCOUNT}/`, external_refs: '{}', created_at: 0, updated_at: 0 }).execute();
      await database.db.insertInto('services').values({ id: 'svc-endpoints', account_id: ACCOUNT, name: 'endpoints', type: 'mqtt', options: '{}', created_at: 0, updated_at: 0 }).execute();
      await database.db
        .insertInto('endpoints')
        .values(CLIENT_IDS.map((id) => ({ id, account_id: ACCOUNT, service_id: 'svc-endpoints', key: id, tags: '{}', status_details: '{}', parameters: '{}', trace: 0, created_at: 0, updated_at: 0 })))
        .execute();
      store = new SqlMqttSessionStore(database.db);
    });
    after(async () => {
      await database?.close();
      await drop();
      await rm(dataDir, { recursive: true, force: true });
    });

    /** Each broker is one service's (its state is keyed by the service): a new service per case keeps cases apart. */
    const newService = async (): Promise<string> => {
      const serviceId = `svc-${++services}`;
      await database.db.insertInto('services').values({ id: serviceId, account_id: ACCOUNT, name: serviceId, type: 'mqtt', options: '{}', created_at: 0, updated_at: 0 }).execute();
      return serviceId;
    };
    const persistenceOf = (serviceId: string) => new DurablePersistence(store, serviceId, logger);

    describe('as aedes uses it', () => {
      abstractPersistence({ test: (name, body) => void it(name, body), persistence: async () => persistenceOf(await newService()), testAsync: true });
    });

    describe('restarted before every read', () => {
      const seen = new Set<string>();
      abstractPersistence({
        test: (name, body) => {
          seen.add(name);
          const excluded = NOT_AFTER_RESTART[name];
          if (excluded) it(name, { skip: `not after a restart: ${excluded}` }, body);
          else it(name, body);
        },
        persistence: async () => {
          const serviceId = await newService();
          return new RestartedOnRead(() => persistenceOf(serviceId));
        },
        testAsync: true,
      });
      it('every case excluded above is a case of the suite', () => {
        assert.deepEqual(Object.keys(NOT_AFTER_RESTART).filter((name) => !seen.has(name)), []);
      });
    });

    describe('beyond the abstract suite', () => {
      const client = (id: string) => ({ id, clean: false }) as unknown as Client;
      const publish = (brokerCounter: number, qos: 1 | 2, extra: Partial<AedesPublishPacket> = {}) =>
        ({ cmd: 'publish', topic: 'cmd/x', payload: Buffer.from(`m${brokerCounter}`), qos, retain: false, dup: false, brokerId: 'broker-own', brokerCounter, ...extra }) as AedesPacket;
      const restarted = async (serviceId: string) => {
        const persistence = persistenceOf(serviceId);
        await persistence.setup(BROKER);
        return persistence;
      };
      const queued = async (persistence: DurablePersistence, clientId: string) =>
        (await persistence.outgoingStream(client(clientId)).toArray()).map((packet: AedesPacket) => ({ cmd: packet.cmd, brokerCounter: packet.brokerCounter, messageId: packet.messageId }));

      it('a QoS 1 or 2 message whose flow completed is not sent again after a restart', async () => {
        const serviceId = await newService();
        const first = await restarted(serviceId);
        await first.addSubscriptions(client('abcde'), [{ topic: 'cmd/#', qos: 2 }]);
        await first.outgoingEnqueueCombi([{ clientId: 'abcde' }], publish(1, 1));
        await first.outgoingEnqueueCombi([{ clientId: 'abcde' }], publish(2, 2));
        // What aedes does as the device answers: the sends record their packet ids, PUBACK; PUBREC → PUBREL; PUBCOMP.
        await first.outgoingUpdate(client('abcde'), publish(1, 1, { messageId: 7 }));
        await first.outgoingUpdate(client('abcde'), publish(2, 2, { messageId: 8 }));
        await first.outgoingClearMessageId(client('abcde'), { cmd: 'puback', messageId: 7 } as unknown as AedesPacket);
        await first.outgoingUpdate(client('abcde'), { cmd: 'pubrel', messageId: 8 } as unknown as AedesPacket);
        await first.outgoingClearMessageId(client('abcde'), { cmd: 'pubcomp', messageId: 8 } as unknown as AedesPacket);
        assert.deepEqual(await queued(first, 'abcde'), []);
        assert.deepEqual(await queued(await restarted(serviceId), 'abcde'), [], 'nothing is sent again');
      });

      it('a message sent but not acknowledged is restored with its packet id; a PUBACK after the restart dequeues it for good', async () => {
        const serviceId = await newService();
        const first = await restarted(serviceId);
        await first.addSubscriptions(client('abcde'), [{ topic: 'cmd/#', qos: 1 }]);
        for (const counter of [1, 2, 3]) await first.outgoingEnqueueCombi([{ clientId: 'abcde' }], publish(counter, 1));
        await first.outgoingUpdate(client('abcde'), publish(1, 1, { messageId: 41 }));
        await first.outgoingUpdate(client('abcde'), publish(2, 1, { messageId: 42 }));
        const second = await restarted(serviceId);
        assert.deepEqual(await queued(second, 'abcde'), [
          { cmd: 'publish', brokerCounter: 1, messageId: 41 },
          { cmd: 'publish', brokerCounter: 2, messageId: 42 },
          { cmd: 'publish', brokerCounter: 3, messageId: undefined },
        ]);
        await second.outgoingClearMessageId(client('abcde'), { cmd: 'puback', messageId: 42 } as unknown as AedesPacket);
        assert.deepEqual((await queued(await restarted(serviceId), 'abcde')).map((packet) => packet.brokerCounter), [1, 3]);
      });

      it('a QoS 2 message the device PUBREC\'d comes back as its PUBREL after a restart; the PUBCOMP then ends it for good', async () => {
        const serviceId = await newService();
        const first = await restarted(serviceId);
        await first.addSubscriptions(client('abcde'), [{ topic: 'cmd/#', qos: 2 }]);
        await first.outgoingEnqueueCombi([{ clientId: 'abcde' }], publish(1, 2));
        await first.outgoingEnqueueCombi([{ clientId: 'abcde' }], publish(2, 2));
        await first.outgoingUpdate(client('abcde'), publish(1, 2, { messageId: 11 }));
        await first.outgoingUpdate(client('abcde'), publish(2, 2, { messageId: 12 }));
        // The device's PUBREC of the first: aedes puts a PUBREL in the PUBLISH's place.
        await first.outgoingUpdate(client('abcde'), { cmd: 'pubrel', messageId: 11 } as unknown as AedesPacket);
        const second = await restarted(serviceId);
        assert.deepEqual(await queued(second, 'abcde'), [
          { cmd: 'pubrel', brokerCounter: 1, messageId: 11 },
          { cmd: 'publish', brokerCounter: 2, messageId: 12 },
        ]);
        // What the broker writes at the reconnection: the PUBREL as aedes' own, without the message's fields.
        const [pubrel] = await second.outgoingStream(client('abcde')).toArray();
        assert.deepEqual({ ...pubrel }, { cmd: 'pubrel', messageId: 11 });
        // A restart again before the PUBCOMP changes nothing; the PUBCOMP dequeues it for good.
        const third = await restarted(serviceId);
        assert.deepEqual((await queued(third, 'abcde')).map((packet) => packet.cmd), ['pubrel', 'publish']);
        await third.outgoingClearMessageId(client('abcde'), { cmd: 'pubcomp', messageId: 11 } as unknown as AedesPacket);
        assert.deepEqual(await queued(await restarted(serviceId), 'abcde'), [{ cmd: 'publish', brokerCounter: 2, messageId: 12 }]);
      });

      it('a PUBLISH sent again with the packet id it went with carries DUP; its first sending does not', async () => {
        const serviceId = await newService();
        const broker = await restarted(serviceId);
        await broker.addSubscriptions(client('abcde'), [{ topic: 'cmd/#', qos: 1 }]);
        await broker.outgoingEnqueueCombi([{ clientId: 'abcde' }], publish(1, 1));
        const first = publish(1, 1, { messageId: 21 }) as AedesPublishPacket;
        await broker.outgoingUpdate(client('abcde'), first);
        assert.equal(first.dup, false);
        // The device reconnects before its PUBACK: aedes sends the queued message again, through outgoingUpdate.
        const resent = publish(1, 1, { messageId: 21 }) as AedesPublishPacket;
        await broker.outgoingUpdate(client('abcde'), resent);
        assert.equal(resent.dup, true);
        // After a restart as well.
        const afterRestart = publish(1, 1, { messageId: 21 }) as AedesPublishPacket;
        await (await restarted(serviceId)).outgoingUpdate(client('abcde'), afterRestart);
        assert.equal(afterRestart.dup, true);
      });

      it('a clean session leaves nothing of the persistent one to restore', async () => {
        const serviceId = await newService();
        const first = await restarted(serviceId);
        await first.addSubscriptions(client('efghi'), [{ topic: 'cmd/#', qos: 1 }]);
        await first.outgoingEnqueueCombi([{ clientId: 'efghi' }], publish(1, 1));
        await first.incomingStorePacket(client('efghi'), publish(9, 2, { messageId: 9 }));
        // aedes at a CONNECT with clean session 1.
        await first.cleanSubscriptions(client('efghi'));
        const second = await restarted(serviceId);
        assert.deepEqual(await second.subscriptionsByClient(client('efghi')), []);
        assert.deepEqual(await queued(second, 'efghi'), []);
        await assert.rejects(second.incomingGetPacket(client('efghi'), { messageId: 9 } as AedesPacket), /no such packet/);
      });

      it("each service's broker restores its own retained messages, sessions and queues only", async () => {
        const [a, b] = [await newService(), await newService()];
        const brokerA = await restarted(a);
        await brokerA.storeRetained(publish(1, 1, { topic: 'state', retain: true }));
        await brokerA.addSubscriptions(client('fghij'), [{ topic: 'cmd/#', qos: 1 }]);
        await brokerA.outgoingEnqueueCombi([{ clientId: 'fghij' }], publish(2, 1));
        const brokerB = await restarted(b);
        assert.deepEqual(await brokerB.createRetainedStream('#').toArray(), []);
        assert.deepEqual(await brokerB.subscriptionsByClient(client('fghij')), []);
        assert.deepEqual(await queued(brokerB, 'fghij'), []);
        const againA = await restarted(a);
        const retained = (await againA.createRetainedStream('#').toArray()).map(({ topic, payload, qos, retain }: AedesPublishPacket) => ({ topic, payload, qos, retain }));
        assert.deepEqual(retained, [{ topic: 'state', payload: Buffer.from('m1'), qos: 1, retain: true }]);
        assert.deepEqual((await againA.subscriptionsByClient(client('fghij'))).map(({ topic, qos }) => ({ topic, qos })), [{ topic: 'cmd/#', qos: 1 }]);
        assert.deepEqual((await queued(againA, 'fghij')).map((packet) => packet.brokerCounter), [2]);
      });
    });
  });
}

type P = DurablePersistence;

/**
 * A persistence for the abstract suite whose reads each come from a new DurablePersistence loaded from the store (a
 * restart); writes go to the current one. aedes queues a message only for a session subscribed to it, and only a
 * subscribed (persistent) session's queue is stored: a case that queues for a client that never subscribed has that
 * client subscribed first, as it would be.
 */
class RestartedOnRead {
  readonly #make: () => P;
  #current: P;
  #broker: Aedes | undefined;

  constructor(make: () => P) {
    this.#make = make;
    this.#current = make();
  }

  get broker(): Aedes | undefined {
    return this.#broker;
  }

  async setup(broker: Aedes): Promise<void> {
    this.#broker = broker;
    await this.#current.setup(broker);
  }

  async #restart(): Promise<P> {
    const next = this.#make();
    await next.setup(this.#broker!);
    await this.#current.destroy();
    this.#current = next;
    return next;
  }

  #readAfterRestart(read: (persistence: P) => Readable): Readable {
    const restart = () => this.#restart();
    return Readable.from(
      (async function* () {
        yield* read(await restart());
      })(),
    );
  }

  async #subscribed(subs: readonly { clientId: string }[], packet: AedesPacket): Promise<void> {
    for (const { clientId } of subs) {
      if (!this.#current.isDurable(clientId)) await this.#current.subscribeOffline(clientId, { topic: (packet as AedesPublishPacket).topic, qos: 1 });
    }
  }

  // Writes.
  storeRetained(...args: Parameters<P['storeRetained']>) {
    return this.#current.storeRetained(...args);
  }
  addSubscriptions(...args: Parameters<P['addSubscriptions']>) {
    return this.#current.addSubscriptions(...args);
  }
  removeSubscriptions(...args: Parameters<P['removeSubscriptions']>) {
    return this.#current.removeSubscriptions(...args);
  }
  cleanSubscriptions(...args: Parameters<P['cleanSubscriptions']>) {
    return this.#current.cleanSubscriptions(...args);
  }
  async outgoingEnqueue(...args: Parameters<P['outgoingEnqueue']>) {
    await this.#subscribed([args[0]], args[1]);
    return this.#current.outgoingEnqueue(...args);
  }
  async outgoingEnqueueCombi(...args: Parameters<P['outgoingEnqueueCombi']>) {
    await this.#subscribed(args[0], args[1]);
    return this.#current.outgoingEnqueueCombi(...args);
  }
  outgoingUpdate(...args: Parameters<P['outgoingUpdate']>) {
    return this.#current.outgoingUpdate(...args);
  }
  outgoingClearMessageId(...args: Parameters<P['outgoingClearMessageId']>) {
    return this.#current.outgoingClearMessageId(...args);
  }
  incomingStorePacket(...args: Parameters<P['incomingStorePacket']>) {
    return this.#current.incomingStorePacket(...args);
  }
  incomingDelPacket(...args: Parameters<P['incomingDelPacket']>) {
    return this.#current.incomingDelPacket(...args);
  }
  cleanIncoming(...args: Parameters<P['cleanIncoming']>) {
    return this.#current.cleanIncoming(...args);
  }
  putWill(...args: Parameters<P['putWill']>) {
    return this.#current.putWill(...args);
  }
  delWill(...args: Parameters<P['delWill']>) {
    return this.#current.delWill(...args);
  }
  destroy() {
    return this.#current.destroy();
  }

  // Reads, after a restart.
  async subscriptionsByClient(...args: Parameters<P['subscriptionsByClient']>) {
    return (await this.#restart()).subscriptionsByClient(...args);
  }
  async countOffline() {
    return (await this.#restart()).countOffline();
  }
  async subscriptionsByTopic(...args: Parameters<P['subscriptionsByTopic']>) {
    return (await this.#restart()).subscriptionsByTopic(...args);
  }
  async incomingGetPacket(...args: Parameters<P['incomingGetPacket']>) {
    return (await this.#restart()).incomingGetPacket(...args);
  }
  async getWill(...args: Parameters<P['getWill']>) {
    return (await this.#restart()).getWill(...args);
  }
  createRetainedStream(...args: Parameters<P['createRetainedStream']>) {
    return this.#readAfterRestart((persistence) => persistence.createRetainedStream(...args));
  }
  createRetainedStreamCombi(...args: Parameters<P['createRetainedStreamCombi']>) {
    return this.#readAfterRestart((persistence) => persistence.createRetainedStreamCombi(...args));
  }
  getClientList(...args: Parameters<P['getClientList']>) {
    return this.#readAfterRestart((persistence) => persistence.getClientList(...args));
  }
  outgoingStream(...args: Parameters<P['outgoingStream']>) {
    return this.#readAfterRestart((persistence) => persistence.outgoingStream(...args));
  }
  streamWill(...args: Parameters<P['streamWill']>) {
    return this.#readAfterRestart((persistence) => persistence.streamWill(...args));
  }
}
