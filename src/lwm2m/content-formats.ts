import type { CoreLink } from './codecs/index.js';
import { CONTENT_FORMATS } from './model.js';

/**
 * Which content format to use with a device (OMA LwM2M Core 1.1/1.2 §7, Register §6.2.1). A device says what
 * it takes in the `ct` attribute of its root link (`</>;rt="oma.lwm2m";ct=110`, or several: `ct="110 112"`,
 * `ct=110;ct=112`); beyond that, each version has formats every client must take (1.0: TLV; all: plain
 * text and opaque for single resources). A request goes out in the first format of `formatsToTry`; when the
 * device answers 4.06 or 4.15 and nobody chose the format, the next ones are tried (MAX_FORMAT_ATTEMPTS in all).
 */

/** What a request carries: one resource value, several (an object, an instance, a multi-instance resource), or paths of several objects. */
export type PayloadKind = 'single' | 'multiple' | 'composite';

/** Formats for several values, best first (compact and typed first). */
const MULTIPLE_ORDER = [CONTENT_FORMATS.senmlCbor, CONTENT_FORMATS.senmlJson, CONTENT_FORMATS.tlv, CONTENT_FORMATS.lwm2mJson] as const;
/** Read-Composite, Write-Composite and Observe-Composite carry SenML only (Core 1.1 §6.3.1). */
const COMPOSITE_ORDER = [CONTENT_FORMATS.senmlCbor, CONTENT_FORMATS.senmlJson] as const;

/** The content formats announced in the root link's `ct` attribute(s) of a Register or Update payload, in order. */
export function announcedFormats(links: readonly CoreLink[]): number[] {
  // The root link is the one with rt="oma.lwm2m", or `</>` (Zephyr announces `</>;ct=112` without rt).
  const root = links.find((link) => link.attributes.some((a) => a.name === 'rt' && a.value === 'oma.lwm2m')) ?? links.find((link) => link.target === '/');
  const formats: number[] = [];
  for (const attribute of root?.attributes ?? []) {
    if (attribute.name !== 'ct' || attribute.value === undefined) continue;
    for (const token of attribute.value.split(/\s+/)) {
      if (!/^\d{1,5}$/.test(token)) continue;
      const format = canonical(Number(token));
      if (!formats.includes(format)) formats.push(format);
    }
  }
  return formats;
}

export interface FormatChoice {
  /** The device's `lwm2m` version. */
  readonly lwm2mVersion: string;
  /** What it announced (`announcedFormats`). */
  readonly announced: readonly number[];
  readonly kind: PayloadKind;
  /** A format configured for the endpoint or its service (`preferredFormat`): tried first. */
  readonly preferred?: number | undefined;
  /** What worked with this device for this kind before: tried before the rest. */
  readonly remembered?: number | undefined;
}

/**
 * The formats to try for a request, best first, without repeats (Core 1.1 §7.4: a 1.1+ client MUST take plain
 * text and opaque for single resources and SHOULD take SenML CBOR or SenML JSON; a 1.0 client MUST take TLV).
 * After the caller's preference and what worked before: for a single resource, LwM2M CBOR where a 1.2 device
 * announced it, then plain text; for several values, what the device announced (SenML CBOR, SenML JSON, TLV,
 * LwM2M JSON), then SenML CBOR, SenML JSON, TLV; composite operations take SenML only.
 */
export function formatsToTry(choice: FormatChoice): number[] {
  const legacy = choice.lwm2mVersion === '1.0';
  const announced = new Set(choice.announced);
  const candidates: number[] = [];
  const add = (format: number | undefined) => {
    if (format !== undefined && !candidates.includes(format)) candidates.push(format);
  };
  if (choice.kind === 'composite') {
    for (const format of [choice.preferred, choice.remembered]) if (format !== undefined && (COMPOSITE_ORDER as readonly number[]).includes(format)) add(format);
    for (const format of COMPOSITE_ORDER) if (announced.has(format)) add(format);
    for (const format of COMPOSITE_ORDER) add(format);
    return candidates;
  }
  add(choice.preferred);
  add(choice.remembered);
  if (choice.kind === 'single') {
    if (!legacy && choice.lwm2mVersion !== '1.1' && announced.has(CONTENT_FORMATS.lwm2mCbor)) add(CONTENT_FORMATS.lwm2mCbor);
    add(legacy ? CONTENT_FORMATS.tlv : CONTENT_FORMATS.text);
  }
  if (legacy) add(CONTENT_FORMATS.tlv);
  for (const format of MULTIPLE_ORDER) if (announced.has(format)) add(format);
  if (!legacy) for (const format of [CONTENT_FORMATS.senmlCbor, CONTENT_FORMATS.senmlJson, CONTENT_FORMATS.tlv]) add(format);
  if (choice.kind === 'single') add(CONTENT_FORMATS.text);
  return candidates;
}

/** How many formats one request tries before the device's refusal is the answer (each costs a round trip, once per registration). */
export const MAX_FORMAT_ATTEMPTS = 3;

/** A 4.06 (Not Acceptable: it cannot answer in that format) or 4.15 (Unsupported Content-Format: it cannot read it). */
export function isFormatRefusal(code: string): boolean {
  return code === '4.06' || code === '4.15';
}

/** The registered number for a pre-registration one some 1.0 clients still use (1542 → 11542, 1543 → 11543). */
function canonical(format: number): number {
  if (format === CONTENT_FORMATS.oldTlv) return CONTENT_FORMATS.tlv;
  if (format === CONTENT_FORMATS.oldJson) return CONTENT_FORMATS.lwm2mJson;
  return format;
}
