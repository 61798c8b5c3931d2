/**
 * The service under test of bench/mqtt.ts, in a process of its own (as the Mosquitto reference is), so the
 * benchmark's MQTT clients do not share its event loop. Started with the data directory, admin token and, on
 * PostgreSQL, the database URL (BENCH_DATABASE_URL) in the environment; tells its parent the bound ports, then, batched per event-loop turn, which benchmark
 * messages finished: a bus consumer subscribed after the trigger engine sees an `mqtt-publish` event once the
 * triggers for it have finished. Stops when the parent sends "stop" (or goes away).
 */
import pino from 'pino';
import { IotBridge } from '../src/app.js';
import { loadConfig } from '../src/config.js';

/** What the parent hears. */
export type ServiceMessage =
  | { readonly kind: 'started'; readonly ports: Record<string, number> }
  /** Per round (the tag its topics end in), the sequence numbers of its messages: one short IPC message per turn. */
  | { readonly kind: 'finished'; readonly rounds: [tag: string, seqs: number[]][] }
  | { readonly kind: 'stopped'; readonly warnings: number };

const send = (message: ServiceMessage) => process.send?.(message);
let warnings = 0;
const logStream = {
  write(line: string) {
    warnings++;
    process.stderr.write(line);
  },
};
// The report costs the service (and the benchmark's process, which parses it) per message: kept small.
let pending = new Map<string, number[]>();
const bridge = new IotBridge(
  loadConfig({}, { httpPort: 0, udpPort: 0, tcpPort: 0, coapPort: 0, coapsPort: 0, mqttPort: 0, httpHost: '127.0.0.1', mqttHost: '127.0.0.1', coapHost: '127.0.0.1', dataDir: process.env.BENCH_DATA_DIR!, ...(process.env.BENCH_DATABASE_URL ? { databaseUrl: process.env.BENCH_DATABASE_URL } : {}), adminToken: process.env.BENCH_ADMIN_TOKEN!, ...(process.env.BENCH_EVENT_PARALLELISM ? { eventParallelism: Number(process.env.BENCH_EVENT_PARALLELISM) } : {}) }),
  pino({ level: 'warn' }, logStream),
  {
    // A batch consumer: no promise per event (the report is the benchmark's cost, not the service's).
    beforeBusStart: (bus) =>
      bus.subscribeBatches((events) => {
        for (const event of events) {
          if (event.type !== 'mqtt-publish') continue;
          const data = event.data as { topic?: string; text?: string };
          const at = data.topic?.lastIndexOf('/bench/') ?? -1;
          if (at < 0) continue;
          if (pending.size === 0) {
            setImmediate(() => {
              send({ kind: 'finished', rounds: [...pending] });
              pending = new Map();
            });
          }
          const tag = data.topic!.slice(at + 7);
          let seqs = pending.get(tag);
          if (!seqs) pending.set(tag, (seqs = []));
          seqs.push(Number(data.text));
        }
        return Promise.resolve();
      }),
  },
);
const started = await bridge.start();
send({ kind: 'started', ports: started.ports });
let stopping: Promise<void> | undefined;
const stop = () => (stopping ??= bridge.stop());
process.on('message', (message) => {
  if (message === 'stop') void stop().then(() => process.send?.({ kind: 'stopped', warnings } satisfies ServiceMessage, () => process.exit(0)));
});
// The benchmark went away without saying stop.
process.on('disconnect', () => void stop().finally(() => process.exit(0)));
