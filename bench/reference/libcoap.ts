/**
 * The reference CoAP server of bench/coap.ts: libcoap's example server `coap-server-notls` (Debian
 * libcoap3-bin), started fresh for the run on a free loopback port. It serves `/` (general info), `/time`
 * (the clock, a short text), `/async` and `/example_data` (`/.well-known/core` lists them); the bench asks it
 * for one with CON GET. Installed with `apt-get install -y libcoap3-bin` when missing and the bench runs as
 * root.
 */
import { spawnSync } from 'node:child_process';
import dgram from 'node:dgram';
import { generate, parse } from 'coap-packet';
import { ensureCommand, freePort, startChild, within, type Child } from './processes.js';

export interface Libcoap {
  readonly port: number;
  /** e.g. "libcoap coap-server-notls 4.3.1". */
  readonly version: string;
  readonly child: Child;
  stop(): Promise<void>;
}

/** The answer to CON GET `resource`, asked again every 200 ms until one comes (an error after `ms`). */
async function get(port: number, resource: string, ms = 10_000): Promise<{ code: string; payload: string }> {
  const socket = dgram.createSocket('udp4');
  let timer: NodeJS.Timeout | undefined;
  let deadline: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
    const options = resource
      .split('/')
      .filter(Boolean)
      .map((segment) => ({ name: 'Uri-Path', value: Buffer.from(segment) }));
    const request = generate({ confirmable: true, code: 'GET', messageId: 4242, token: Buffer.from([1, 2, 3, 4]), options });
    return await new Promise((resolve, reject) => {
      socket.on('message', (message) => {
        const packet = parse(message);
        if (packet.messageId === 4242) resolve({ code: packet.code, payload: packet.payload.toString() });
      });
      const send = () => socket.send(request, port, '127.0.0.1');
      send();
      timer = setInterval(send, 200);
      deadline = setTimeout(() => reject(new Error(`coap-server-notls on port ${port} did not answer GET ${resource} within ${ms / 1000} s`)), ms);
    });
  } finally {
    clearInterval(timer);
    clearTimeout(deadline);
    socket.close();
  }
}

export async function startLibcoap(resource: string): Promise<Libcoap> {
  const bin = ensureCommand('coap-server-notls', 'libcoap3-bin');
  // Without an argument -h is an error, and the usage printed names the version.
  const help = spawnSync(bin, ['-h'], { encoding: 'utf8' });
  const version = /v(\d+\.\d+\.\d+\S*)/.exec(`${help.stdout}${help.stderr}`)?.[1];
  const port = await freePort('udp');
  const child = startChild('coap-server-notls', bin, ['-A', '127.0.0.1', '-p', String(port)]);
  try {
    const answer = await within(`starting coap-server-notls on port ${port}`, 15_000, get(port, resource), child);
    if (!answer.code.startsWith('2.')) {
      const listed = await get(port, '/.well-known/core');
      throw new Error(`coap-server-notls answers GET ${resource} with ${answer.code}; it serves ${listed.payload}`);
    }
  } catch (error) {
    await child.stop();
    throw error;
  }
  return { port, version: `libcoap coap-server-notls ${version ?? '(version unknown)'}`, child, stop: () => child.stop() };
}
