import { AppError } from '../errors.js';
import { payloadFields } from '../devices/payload.js';

/**
 * Network-server webhook bodies (ChirpStack v4 HTTP integration, The Things Stack v3 webhooks) turned into
 * one shape: which device, which event, what to record. Both bodies are protobuf messages in their JSON
 * mapping, where a field at its default value (0, false, "") may be left out: a missing counter is 0.
 */

export const LORA_EVENT_TYPES = {
  uplink: 'LORA Uplink',
  join: 'LORA Join',
  ack: 'LORA Ack',
  txAck: 'LORA TxAck',
  status: 'LORA Status',
} as const;
export type LoraEventType = (typeof LORA_EVENT_TYPES)[keyof typeof LORA_EVENT_TYPES];

export interface LoraMessage {
  readonly type: LoraEventType;
  /** Lower-case hex: the endpoint key. */
  readonly devEui: string;
  /** The device itself was heard (uplink, join, acknowledgement, status); a gateway's transmit ack is not. */
  readonly fromDevice: boolean;
  /** The gateway that heard it best, kept as the endpoint's `remoteAddr`. */
  readonly gatewayId: string | undefined;
  /** Status details the service keeps current (`devAddr`, `loraApplicationId`, `loraDeviceId`). */
  readonly details: Record<string, string>;
  readonly data: Record<string, unknown>;
}

/** One gateway's reception of an uplink. */
export interface GatewayReception {
  readonly id: string;
  readonly rssi: number | null;
  readonly snr: number | null;
  readonly time: string | null;
  readonly location: { latitude: number; longitude: number; altitude: number | null } | null;
}

type Json = Record<string, unknown>;

const obj = (value: unknown): Json => (typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {});
const str = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
/** Numbers, and the decimal strings protobuf JSON uses for 64-bit integers (TTS frequencies). */
const num = (value: unknown): number | undefined => {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof n === 'number' && Number.isFinite(n) ? n : undefined;
};
const list = (value: unknown): Json[] => (Array.isArray(value) ? value.map(obj) : []);

function bytes(base64: unknown): Buffer {
  return typeof base64 === 'string' ? Buffer.from(base64, 'base64') : Buffer.alloc(0);
}

function location(value: unknown): GatewayReception['location'] {
  const l = obj(value);
  const latitude = num(l.latitude);
  const longitude = num(l.longitude);
  return latitude === undefined || longitude === undefined ? null : { latitude, longitude, altitude: num(l.altitude) ?? null };
}

/** The reception with the strongest signal first (SNR, then RSSI): its gateway is the device's `remoteAddr`. */
function best(receptions: GatewayReception[]): GatewayReception[] {
  return [...receptions].sort((a, b) => (b.snr ?? -Infinity) - (a.snr ?? -Infinity) || (b.rssi ?? -Infinity) - (a.rssi ?? -Infinity));
}

function radio(receptions: GatewayReception[]): { rssi: number | null; snr: number | null; gateways: GatewayReception[] } {
  const sorted = best(receptions);
  return { rssi: sorted[0]?.rssi ?? null, snr: sorted[0]?.snr ?? null, gateways: sorted };
}

function message(type: LoraEventType, devEui: string, fromDevice: boolean, details: Record<string, string | undefined>, data: Json, gatewayId?: string): LoraMessage {
  const kept = Object.fromEntries(Object.entries(details).filter((entry): entry is [string, string] => entry[1] !== undefined));
  return { type, devEui: devEui.toLowerCase(), fromDevice, gatewayId, details: kept, data };
}

export const CHIRPSTACK_EVENTS = ['up', 'join', 'ack', 'txack', 'status', 'log', 'location', 'integration'] as const;
export type ChirpStackEvent = (typeof CHIRPSTACK_EVENTS)[number];

/**
 * A ChirpStack v4 HTTP integration call (`?event=up|join|ack|txack|status`; integration.proto). `log`,
 * `location` and `integration` events are accepted and not turned into events: undefined.
 */
export function fromChirpStack(event: ChirpStackEvent, body: Json): LoraMessage | undefined {
  const device = obj(body.deviceInfo);
  const devEui = String(device.devEui);
  const time = str(body.time) ?? null;
  const common = { network: 'chirpstack', time, deviceName: str(device.deviceName) ?? null, applicationId: str(device.applicationId) ?? null };
  const details = { loraApplicationId: str(device.applicationId) };
  switch (event) {
    case 'up': {
      // SPEC "Errors" 1: no receiver metadata, no uplink.
      if (!Array.isArray(body.rxInfo) || body.rxInfo.length === 0) throw new AppError('IOTB_LORA_RX_INFO_MISSING', 'The ChirpStack uplink has no rxInfo (receiving gateways)');
      const receptions = list(body.rxInfo).map((rx) => ({
        id: str(rx.gatewayId) ?? 'unknown',
        rssi: num(rx.rssi) ?? null,
        snr: num(rx.snr) ?? null,
        time: str(rx.gwTime) ?? str(rx.time) ?? null,
        location: location(rx.location),
      }));
      const tx = obj(body.txInfo);
      const lora = obj(obj(tx.modulation).lora);
      const signal = radio(receptions);
      return message(LORA_EVENT_TYPES.uplink, devEui, true, { ...details, devAddr: str(body.devAddr) }, {
        ...common,
        id: str(body.deduplicationId) ?? null,
        devEui: devEui.toLowerCase(),
        devAddr: str(body.devAddr) ?? null,
        fCnt: num(body.fCnt) ?? 0,
        port: num(body.fPort) ?? 0,
        confirmed: body.confirmed === true,
        ...payloadFields(bytes(body.data)),
        decoded: body.object ?? null,
        dr: num(body.dr) ?? 0,
        frequency: num(tx.frequency) ?? null,
        spreadingFactor: num(lora.spreadingFactor) ?? null,
        bandwidth: num(lora.bandwidth) ?? null,
        ...signal,
      }, signal.gateways[0]?.id);
    }
    case 'join':
      return message(LORA_EVENT_TYPES.join, devEui, true, { ...details, devAddr: str(body.devAddr) }, {
        ...common,
        id: str(body.deduplicationId) ?? null,
        devEui: devEui.toLowerCase(),
        devAddr: str(body.devAddr) ?? null,
      });
    case 'ack':
      return message(LORA_EVENT_TYPES.ack, devEui, body.acknowledged === true, details, {
        ...common,
        queueItemId: str(body.queueItemId) ?? null,
        acknowledged: body.acknowledged === true,
        fCntDown: num(body.fCntDown) ?? 0,
      });
    case 'txack':
      return message(LORA_EVENT_TYPES.txAck, devEui, false, details, {
        ...common,
        queueItemId: str(body.queueItemId) ?? null,
        downlinkId: num(body.downlinkId) ?? null,
        fCntDown: num(body.fCntDown) ?? 0,
        gatewayId: str(body.gatewayId) ?? null,
        frequency: num(obj(body.txInfo).frequency) ?? null,
      });
    case 'status':
      return message(LORA_EVENT_TYPES.status, devEui, true, details, {
        ...common,
        margin: num(body.margin) ?? 0,
        externalPowerSource: body.externalPowerSource === true,
        batteryLevel: body.batteryLevelUnavailable === true ? null : (num(body.batteryLevel) ?? 0),
      });
    default:
      return undefined;
  }
}

/**
 * A The Things Stack v3 webhook call (an `ApplicationUp` message): `uplink_message`, `join_accept`,
 * `downlink_ack`, `downlink_nack`, `downlink_sent`. Other messages are accepted and ignored: undefined.
 */
export function fromTheThingsStack(body: Json): LoraMessage | undefined {
  const ids = obj(body.end_device_ids);
  const devEui = str(ids.dev_eui);
  if (devEui === undefined) {
    throw new AppError('IOTB_REQUEST_VALIDATION', 'end_device_ids.dev_eui is needed: the endpoint key is the DevEUI', [{ in: 'body', path: '/end_device_ids/dev_eui', message: 'required' }]);
  }
  const applicationId = str(obj(ids.application_ids).application_id);
  const details = { loraApplicationId: applicationId, loraDeviceId: str(ids.device_id), devAddr: str(ids.dev_addr) };
  const common = { network: 'tts', time: str(body.received_at) ?? null, deviceName: str(ids.device_id) ?? null, applicationId: applicationId ?? null };
  const id = Array.isArray(body.correlation_ids) ? (str(body.correlation_ids[0]) ?? null) : null;
  if (body.uplink_message !== undefined) {
    const up = obj(body.uplink_message);
    if (!Array.isArray(up.rx_metadata) || up.rx_metadata.length === 0) {
      throw new AppError('IOTB_LORA_RX_INFO_MISSING', 'The uplink_message has no rx_metadata (receiving gateways)');
    }
    const receptions = list(up.rx_metadata).map((rx) => {
      const gateway = obj(rx.gateway_ids);
      return {
        id: str(gateway.gateway_id) ?? str(gateway.eui) ?? 'unknown',
        rssi: num(rx.rssi) ?? num(rx.channel_rssi) ?? null,
        snr: num(rx.snr) ?? null,
        time: str(rx.time) ?? null,
        location: location(rx.location),
      };
    });
    const settings = obj(up.settings);
    const lora = obj(obj(settings.data_rate).lora);
    const signal = radio(receptions);
    return message(LORA_EVENT_TYPES.uplink, devEui, true, details, {
      ...common,
      id,
      devEui: devEui.toLowerCase(),
      devAddr: str(ids.dev_addr) ?? null,
      fCnt: num(up.f_cnt) ?? 0,
      port: num(up.f_port) ?? 0,
      confirmed: up.confirmed === true,
      ...payloadFields(bytes(up.frm_payload)),
      decoded: up.decoded_payload ?? null,
      dr: num(settings.data_rate_index) ?? null,
      frequency: num(settings.frequency) ?? null,
      spreadingFactor: num(lora.spreading_factor) ?? null,
      bandwidth: num(lora.bandwidth) ?? null,
      ...signal,
    }, signal.gateways[0]?.id);
  }
  if (body.join_accept !== undefined) {
    return message(LORA_EVENT_TYPES.join, devEui, true, details, { ...common, id, devEui: devEui.toLowerCase(), devAddr: str(ids.dev_addr) ?? null });
  }
  for (const [field, acknowledged] of [['downlink_ack', true], ['downlink_nack', false]] as const) {
    if (body[field] !== undefined) {
      const down = obj(body[field]);
      return message(LORA_EVENT_TYPES.ack, devEui, acknowledged, details, { ...common, id, acknowledged, fCntDown: num(down.f_cnt) ?? 0, port: num(down.f_port) ?? 0 });
    }
  }
  if (body.downlink_sent !== undefined) {
    const down = obj(body.downlink_sent);
    return message(LORA_EVENT_TYPES.txAck, devEui, false, details, { ...common, id, fCntDown: num(down.f_cnt) ?? 0, port: num(down.f_port) ?? 0 });
  }
  return undefined;
}
