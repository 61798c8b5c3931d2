// IOTBRIDGE_COAP_PEER_RATE: the CoAP requests one device (address and port) may send a second before 4.29.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CoapEndpoint, uriPathOptions, uriQueryOptions } from '../../src/coap/index.js';
import { startService } from '../helpers/service.js';

/** Sends `count` requests at once from one socket; returns how many of each code came back. */
async function burst(port: number, count: number): Promise<Record<string, number>> {
  const device = new CoapEndpoint({ host: '127.0.0.1', port: 0, rateLimit: false });
  await device.start();
  try {
    const answers = await Promise.all(
      Array.from({ length: count }, () => device.request({ address: '127.0.0.1', port }, { code: '0.02', options: [...uriPathOptions('/x'), ...uriQueryOptions(['ep=nobody'])], payload: 'x' })),
    );
    const codes: Record<string, number> = {};
    for (const answer of answers) codes[answer.code] = (codes[answer.code] ?? 0) + 1;
    return codes;
  } finally {
    await device.stop();
  }
}

describe('IOTBRIDGE_COAP_PEER_RATE', () => {
  it('answers 4.29 past the configured rate and burst, and not at all when set to 0', async () => {
    const limited = await startService('sqlite', { coapPeerRate: 2 });
    try {
      const codes = await burst(limited.ports.coap!, 10);
      // A burst of twice the rate is let through (4.03: no such device), the rest is told to wait.
      assert.ok((codes['4.29'] ?? 0) >= 5, JSON.stringify(codes));
      assert.ok((codes['4.03'] ?? 0) >= 4, JSON.stringify(codes));
    } finally {
      await limited.stop();
    }
    const open = await startService('sqlite', { coapPeerRate: 0 });
    try {
      const codes = await burst(open.ports.coap!, 300);
      assert.deepEqual(codes, { '4.03': 300 });
    } finally {
      await open.stop();
    }
  });

  it('refuses a negative rate with the variable named', async () => {
    await assert.rejects(startService('sqlite', { coapPeerRate: -1 }), /IOTBRIDGE_COAP_PEER_RATE must be an integer from 0/);
  });
});
