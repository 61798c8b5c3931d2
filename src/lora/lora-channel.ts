import type { Scope } from '../domain/scope.js';

export const TTS_PRIORITIES = ['LOWEST', 'LOW', 'BELOW_NORMAL', 'NORMAL', 'ABOVE_NORMAL', 'HIGH', 'HIGHEST'] as const;
export type TtsPriority = (typeof TTS_PRIORITIES)[number];

export interface DownlinkOptions {
  /** LoRaWAN FPort, 1 to 223. */
  readonly port: number;
  readonly confirmed: boolean;
  /** The Things Stack only; default NORMAL. */
  readonly priority: TtsPriority;
}

/** What scripts reach through `context.devices.lora` (`lora.downlink`). Tenancy: `scope` must own the endpoint. */
export interface LoraChannel {
  /** Enqueues a downlink at the service's network server → the queue item id ChirpStack gives (TTS gives none: null). */
  downlink(scope: Scope, ref: string, payload: Buffer, options: DownlinkOptions): Promise<{ network: string; id: string | null }>;
}
