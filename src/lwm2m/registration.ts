import type { Peer } from '../coap/index.js';
import { randomText } from '../domain/ids.js';
import { parseLinks, type CoreLink } from './codecs/index.js';
import { announcedFormats } from './content-formats.js';

/** What a device said in its Register (OMA LwM2M Core 6.2.1 / Transport 6.4) and later Updates. */
export interface RegistrationParameters {
  /** `ep`: the endpoint client name, which is the endpoint's key. */
  readonly endpointName: string;
  /** `lt` seconds, default 86400. */
  readonly lifetime: number;
  /** `lwm2m` enabler version, default 1.0. */
  readonly lwm2mVersion: string;
  /** `b` binding mode, default `U` (1.0: `U`, `UQ`, `S`, `SQ`, `US`, `UQS`; 1.1+: letters `U`, `S`, `T`, `N`, queue by `Q`). */
  readonly binding: string;
  /** `sms` MSISDN, when given. */
  readonly sms: string | undefined;
  /** Queue mode: `Q` in the 1.1 query, or `Q` in the 1.0 binding. */
  readonly queueMode: boolean;
  /** Object links of the payload (`</1/0>,</3/0>;ver=1.1,…`), as given. */
  readonly objectLinks: readonly CoreLink[];
  /** `rt="oma.lwm2m"` link's target, the root path of the objects (default `/`). */
  readonly rootPath: string;
  /** Content formats announced in the root link's `ct` (content-formats.ts); empty when none. */
  readonly contentFormats: readonly number[];
}

/** A live registration: the parameters, where the device is, and since when. */
export interface Registration extends RegistrationParameters {
  /** The `/rd/<id>` location handed to the device. */
  readonly id: string;
  readonly endpointId: string;
  readonly accountId: string;
  readonly serviceId: string;
  readonly peer: Peer;
  /** Registered over CoAPS (DTLS): updates and requests go the same way. */
  readonly secure?: boolean | undefined;
  /** Who it proved to be over DTLS (PSK identity, or `x509:<certificate SHA-256>`): its updates come from the same. */
  readonly identity?: string | undefined;
  readonly registeredAt: string;
  readonly updatedAt: string;
}

/** A Register/Update the server refuses with 4.00 Bad Request, saying why. */
export class RegistrationError extends Error {}

const BINDING_1_0 = /^(U|UQ|S|SQ|US|UQS)$/;
const BINDING_1_1 = /^[USTN]+$/;

/** Reads the query of a Register request (`ep` is required). */
export function parseRegister(query: readonly string[], payload: Buffer): RegistrationParameters {
  const params = queryMap(query);
  const endpointName = params.get('ep');
  if (endpointName === undefined || endpointName === '') throw new RegistrationError('the endpoint client name (ep) is missing');
  if (endpointName.length > 256) throw new RegistrationError('the endpoint client name (ep) is longer than 256 characters');
  const lwm2mVersion = params.get('lwm2m') ?? '1.0';
  if (!/^1\.\d$/.test(lwm2mVersion)) throw new RegistrationError(`LwM2M version ${lwm2mVersion} is not supported (1.0, 1.1, 1.2)`);
  const update = parseChanges(params, lwm2mVersion);
  const objectLinks = parseObjectLinks(payload);
  return {
    endpointName,
    lifetime: update.lifetime ?? 86_400,
    lwm2mVersion,
    binding: update.binding ?? 'U',
    sms: update.sms,
    queueMode: update.queueMode ?? false,
    objectLinks,
    rootPath: rootPathOf(objectLinks),
    contentFormats: announcedFormats(objectLinks),
  };
}

/** Reads an Update: only what it carries changes (OMA LwM2M Core 6.2.2). */
export function parseUpdate(query: readonly string[], payload: Buffer, current: RegistrationParameters): RegistrationParameters {
  const update = parseChanges(queryMap(query), current.lwm2mVersion);
  const objectLinks = payload.length > 0 ? parseObjectLinks(payload) : current.objectLinks;
  return {
    ...current,
    lifetime: update.lifetime ?? current.lifetime,
    binding: update.binding ?? current.binding,
    sms: update.sms ?? current.sms,
    queueMode: update.queueMode ?? current.queueMode,
    objectLinks,
    rootPath: rootPathOf(objectLinks),
    contentFormats: payload.length > 0 ? announcedFormats(objectLinks) : current.contentFormats,
  };
}

/** A location id for `/rd/<id>`: short, unguessable enough that one device cannot update another's registration by chance. */
export function newRegistrationId(): string {
  return randomText(6, 'base64url');
}

/** Object ids and instances the device announced: `{ 3: [0], 3303: [0, 1], 5: [] }`. */
export function announcedObjects(registration: Pick<RegistrationParameters, 'objectLinks' | 'rootPath'>): Record<number, number[]> {
  const objects: Record<number, number[]> = {};
  const root = registration.rootPath === '/' ? '' : registration.rootPath.replace(/\/$/, '');
  for (const link of registration.objectLinks) {
    if (!link.target.startsWith(`${root}/`)) continue;
    const [objectId, instanceId] = link.target.slice(root.length + 1).split('/').map(Number);
    if (objectId === undefined || !Number.isInteger(objectId)) continue;
    const instances = (objects[objectId] ??= []);
    if (instanceId !== undefined && Number.isInteger(instanceId) && !instances.includes(instanceId)) instances.push(instanceId);
  }
  return objects;
}

function queryMap(query: readonly string[]): Map<string, string> {
  const params = new Map<string, string>();
  for (const item of query) {
    const at = item.indexOf('=');
    params.set(at === -1 ? item : item.slice(0, at), at === -1 ? '' : item.slice(at + 1));
  }
  return params;
}

function parseChanges(params: Map<string, string>, lwm2mVersion: string): { lifetime?: number; binding?: string; sms?: string; queueMode?: boolean } {
  const changes: { lifetime?: number; binding?: string; sms?: string; queueMode?: boolean } = {};
  const lt = params.get('lt');
  if (lt !== undefined) {
    if (!/^\d{1,10}$/.test(lt) || Number(lt) < 1 || Number(lt) > 4_294_967_295) throw new RegistrationError(`lifetime (lt) "${lt}" is not a positive number of seconds`);
    changes.lifetime = Number(lt);
  }
  const binding = params.get('b');
  if (binding !== undefined) {
    const legacy = lwm2mVersion === '1.0';
    if (!(legacy ? BINDING_1_0 : BINDING_1_1).test(binding) && !(!legacy && BINDING_1_0.test(binding))) {
      throw new RegistrationError(`binding (b) "${binding}" is not valid for LwM2M ${lwm2mVersion}`);
    }
    changes.binding = binding;
    if (binding.includes('Q')) changes.queueMode = true;
  }
  if (params.has('Q')) changes.queueMode = true;
  else if (lwm2mVersion === '1.0' && binding !== undefined && !binding.includes('Q')) changes.queueMode = false;
  const sms = params.get('sms');
  if (sms !== undefined) changes.sms = sms;
  return changes;
}

function parseObjectLinks(payload: Buffer): CoreLink[] {
  try {
    return parseLinks(payload);
  } catch (error) {
    throw new RegistrationError(`the object links are not CoRE link format: ${(error as Error).message}`);
  }
}

function rootPathOf(links: readonly CoreLink[]): string {
  const root = links.find((link) => link.attributes.some((a) => a.name === 'rt' && a.value === 'oma.lwm2m'));
  return root?.target ?? '/';
}
