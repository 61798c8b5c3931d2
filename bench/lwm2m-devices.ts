/**
 * The simulated devices of bench/lwm2m.ts, in a process of their own: the load generator must not share the
 * service's event loop (with 10,000 devices in one process the devices took most of the CPU the service was
 * measured with). Driven over the fork IPC channel by bench/lwm2m.ts; each command is answered once.
 *
 *   start       → binds the devices (tools/lwm2m-client.ts SimulatedClient, a UDP socket each) → their ports
 *   register    → Registers every registered device with `peer`, `window` at once → registrations per second
 *   bootstrap   → bootstraps every unconfigured device from `peer`, `window` at once → bootstraps per second
 *   stop        → stops the devices and ends the process
 */
import { option, OptionNumber, type Peer } from '../src/coap/index.js';
import { DEFAULT_VALUES, SimulatedClient } from '../tools/lwm2m-client.js';

export interface DevicesStart {
  readonly cmd: 'start';
  /** Where the registered devices register (`register` with no peer). */
  readonly server: Peer;
  readonly devices: number;
  readonly keyPrefix: string;
  /** Devices with no server configured, for bootstrap rounds. */
  readonly bootstraps: number;
  readonly bootstrapKeyPrefix: string;
}

export type DevicesCommand =
  | DevicesStart
  /** `reference`: a bare POST /rd to `peer` through the same sockets, instead of the device's Register. */
  | { readonly cmd: 'register'; readonly window: number; readonly reference?: Peer }
  | { readonly cmd: 'bootstrap'; readonly window: number; readonly peer: Peer }
  | { readonly cmd: 'stop' };

export type DevicesAnswer = { readonly ports: number[] } | { readonly rate: number } | { readonly error: string };

const clients: SimulatedClient[] = [];
const bootstrapClients: SimulatedClient[] = [];

/** Runs `count` tasks with at most `window` at once; resolves with tasks per second. */
export async function windowed(count: number, window: number, task: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(window, count) }, async () => {
      while (next < count) await task(next++);
    }),
  );
  return count / ((performance.now() - started) / 1000);
}

async function start(command: DevicesStart): Promise<DevicesAnswer> {
  for (let i = 0; i < command.devices; i++) {
    const client = new SimulatedClient({ server: command.server, endpointName: `${command.keyPrefix}${i}`, lifetime: 600 });
    await client.start();
    clients.push(client);
  }
  const unconfigured = DEFAULT_VALUES.filter((record) => !record.path.startsWith('/1/'));
  for (let i = 0; i < command.bootstraps; i++) {
    const client = new SimulatedClient({ endpointName: `${command.bootstrapKeyPrefix}${i}`, values: unconfigured });
    await client.start();
    bootstrapClients.push(client);
  }
  return { ports: clients.map((client) => client.coap.address().port) };
}

async function register(window: number, reference: Peer | undefined): Promise<DevicesAnswer> {
  const rate = await windowed(clients.length, window, async (i) => {
    const client = clients[i]!;
    if (reference) {
      const response = await client.coap.request(reference, { code: '0.02', options: [option(OptionNumber.UriPath, 'rd')], payload: '</1/0>,</3/0>,</3303/0>' });
      if (response.code !== '2.01') throw new Error(`reference registration answered ${response.code}`);
      return;
    }
    const code = await client.register();
    if (code !== '2.01') throw new Error(`registration of device ${i} answered ${code}`);
  });
  return { rate };
}

async function bootstrap(window: number, peer: Peer): Promise<DevicesAnswer> {
  const rate = await windowed(bootstrapClients.length, window, async (i) => {
    const result = await bootstrapClients[i]!.bootstrap(peer, { timeoutMs: 30_000 });
    if (!result.finished) throw new Error(`bootstrap of device ${i} did not finish: ${JSON.stringify(result)}`);
  });
  return { rate };
}

async function stop(): Promise<never> {
  for (const client of [...clients, ...bootstrapClients]) await client.stop();
  process.exit(0);
}

function answer(message: DevicesAnswer): void {
  process.send!(message);
}

process.on('message', (command: DevicesCommand) => {
  const run = (): Promise<DevicesAnswer> => {
    switch (command.cmd) {
      case 'start':
        return start(command);
      case 'register':
        return register(command.window, command.reference);
      case 'bootstrap':
        return bootstrap(command.window, command.peer);
      case 'stop':
        return stop();
    }
  };
  run().then(answer, (error: unknown) => answer({ error: error instanceof Error ? error.message : String(error) }));
});
// The bench went away: nothing left to drive these devices.
process.on('disconnect', () => process.exit(0));
