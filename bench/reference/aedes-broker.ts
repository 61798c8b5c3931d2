/**
 * The second reference of bench/mqtt.ts (started by bench/reference/aedes.ts): a bare aedes broker, the MQTT
 * broker library the service is built on, without any of the service's work: no authentication, aedes' default
 * in-memory persistence, no event handlers. Alone in its process, it listens on 127.0.0.1 at the port given as
 * its argument (default 0: the system's choice) and writes `{"port":N}` on stdout; stops on SIGTERM/SIGINT and
 * when its stdin ends (the bench went away).
 *
 *   node --import tsx bench/reference/aedes-broker.ts [port]      (compiled: node dist/bench/reference/aedes-broker.js)
 */
import net from 'node:net';
import { Aedes } from 'aedes';

/** The line it writes once it listens. */
export interface AedesListening {
  readonly port: number;
}

const broker = await Aedes.createBroker();
const server = net.createServer(broker.handle);
await new Promise<void>((resolve, reject) => {
  server.once('error', reject);
  server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => resolve());
});
process.stdout.write(`${JSON.stringify({ port: (server.address() as net.AddressInfo).port } satisfies AedesListening)}\n`);

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  server.close();
  broker.close(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
process.stdin.on('end', stop);
process.stdin.on('error', stop);
process.stdin.resume();
