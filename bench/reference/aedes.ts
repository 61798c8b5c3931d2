/**
 * The second reference broker of bench/mqtt.ts: a bare aedes (bench/reference/aedes-broker.ts), the broker
 * library the service is built on, with no authentication, no persistence beyond aedes' in-memory default and
 * no event handlers, started fresh in a Node process of its own on a loopback port of the system's choice.
 * Beside the service and Mosquitto it shows how much of the service's cost is the library's and how much is
 * the service's own work (log-ins, durable events, triggers). Node runs it with the flags `npm start` gives
 * the service, so that the two Node brokers differ by that work alone.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AedesListening } from './aedes-broker.js';
import { SERVICE_NODE_FLAGS, startChild, within, type Child } from './processes.js';

export interface BareAedes {
  readonly url: string;
  /** e.g. "aedes 1.2.0". */
  readonly version: string;
  readonly child: Child;
  stop(): Promise<void>;
}

/** The version of the aedes in node_modules: its package.json, found beside its entry point (its exports leave it out). */
function aedesVersion(): string {
  const entry = createRequire(import.meta.url).resolve('aedes');
  return (JSON.parse(readFileSync(path.join(path.dirname(entry), 'package.json'), 'utf8')) as { version: string }).version;
}

export async function startBareAedes(): Promise<BareAedes> {
  const version = `aedes ${aedesVersion()}`;
  // Compiled (npm run bench:mqtt), the script beside this one in dist/; from source, under tsx.
  const compiled = import.meta.url.endsWith('.js');
  const script = fileURLToPath(new URL(compiled ? './aedes-broker.js' : './aedes-broker.ts', import.meta.url));
  let reported: ((port: number) => void) | undefined;
  const port = new Promise<number>((resolve) => (reported = resolve));
  const child = startChild('bare aedes', process.execPath, [...SERVICE_NODE_FLAGS, ...(compiled ? [] : ['--import', 'tsx']), script], {
    onLine: (line) => {
      if (line.startsWith('{"port"')) reported?.((JSON.parse(line) as AedesListening).port);
    },
  });
  try {
    return { url: `mqtt://127.0.0.1:${await within('starting bare aedes', 30_000, port, child)}`, version, child, stop: () => child.stop() };
  } catch (error) {
    await child.stop();
    throw error;
  }
}
