// RFC 7252 4.4: a message ID "MUST NOT be re-used (in the communication with the same endpoint) within the
// EXCHANGE_LIFETIME". With one counter for all peers, a fleet's traffic wrapped it within minutes and a device
// answered a new request from its duplicate cache (bench:fota found it): IDs are counted per peer.
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { after, before, describe, it } from 'node:test';
import { CoapEndpoint, decodeMessage, encodeMessage, type Peer } from '../../src/coap/index.js';

/** A device on loopback that records the message IDs it gets and answers each CON with an empty 2.05 ACK. */
async function device(): Promise<{ peer: Peer; ids: number[]; close: () => void }> {
  const socket = dgram.createSocket('udp4');
  const ids: number[] = [];
  socket.on('message', (datagram, from) => {
    const message = decodeMessage(datagram);
    ids.push(message.messageId);
    socket.send(encodeMessage({ type: 'ACK', code: '2.05', messageId: message.messageId, token: message.token, options: [], payload: Buffer.alloc(0) }), from.port, from.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { peer: { address: '127.0.0.1', port: socket.address().port }, ids, close: () => socket.close() };
}

describe('CoAP message IDs', () => {
  const server = new CoapEndpoint({ host: '127.0.0.1', port: 0, rateLimit: false });
  before(() => server.start());
  after(() => server.stop());

  it('are counted per peer: traffic to other peers does not move a peer\'s sequence', async () => {
    const a = await device();
    const b = await device();
    try {
      const get = (peer: Peer) => server.request(peer, { code: '0.01', options: [] }, { timeout: 2000 });
      await get(a.peer);
      for (let i = 0; i < 50; i++) await get(b.peer);
      await get(a.peer);
      assert.equal(a.ids.length, 2);
      assert.equal((a.ids[1]! - a.ids[0]! + 0x10000) % 0x10000, 1, 'the next ID towards this peer');
      for (let i = 1; i < b.ids.length; i++) assert.equal((b.ids[i]! - b.ids[i - 1]! + 0x10000) % 0x10000, 1);
      assert.equal(new Set(b.ids).size, 50);
    } finally {
      a.close();
      b.close();
    }
  });
});
