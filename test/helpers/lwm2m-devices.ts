import { SimulatedClient, type SimulatedClientOptions } from '../../tools/lwm2m-client.js';

/** Simulated LwM2M devices (tools/lwm2m-client.ts) of a test service, each on its own UDP socket; stopped by `stopAll`. */
export class SimulatedDevices {
  readonly #clients: SimulatedClient[] = [];
  readonly #port: () => number;

  /** `port`: the service's CoAP port, read when a device starts. */
  constructor(port: () => number) {
    this.#port = port;
  }

  async start(endpointName: string, extra: Partial<SimulatedClientOptions> = {}): Promise<SimulatedClient> {
    const client = new SimulatedClient({ server: { address: '127.0.0.1', port: this.#port() }, endpointName, ...extra });
    await client.start();
    this.#clients.push(client);
    return client;
  }

  async stopAll(): Promise<void> {
    for (const client of this.#clients.splice(0)) await client.stop();
  }
}
