import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseLinks } from '../../src/lwm2m/codecs/index.js';
import { announcedFormats, formatsToTry } from '../../src/lwm2m/content-formats.js';

const TLV = 11542;
const SENML_JSON = 110;
const SENML_CBOR = 112;
const LWM2M_CBOR = 11544;
const TEXT = 0;

describe('LwM2M content formats a device announced and the ones to try', () => {
  it('reads the root link ct as Wakaama, Zephyr, Leshan and the 1.2 spec write it', () => {
    const cases: [string, number[]][] = [
      ['</>;rt="oma.lwm2m";ct=110,</1/0>,</3/0>', [SENML_JSON]], // Wakaama with SenML JSON
      ['</>;rt="oma.lwm2m";ct=112,</3/0>', [SENML_CBOR]], // Wakaama with SenML CBOR
      ['</>;ct=112,</3/0>', [SENML_CBOR]], // Zephyr: no rt
      ['</>;ct="110 112 60",</1/0>', [SENML_JSON, SENML_CBOR, 60]], // Core 1.2 §6.2.1 example
      ['</>;rt="oma.lwm2m";ct="60 110 112 1542 1543 11542 11543"', [60, SENML_JSON, SENML_CBOR, TLV, 11543]], // Leshan client; old numbers folded
      ['</>;ct=110;ct=112,</3/0>', [SENML_JSON, SENML_CBOR]], // repeated (invalid, tolerated)
      ['</>;rt="oma.lwm2m",</3/0>', []], // Wakaama without JSON: nothing announced
      ['</1>;ver=1.1,</1/0>,</3/0>', []], // Anjay: no root link
      ['</>;rt="oma.lwm2m";ct="abc 110"', [SENML_JSON]], // junk skipped
    ];
    for (const [payload, expected] of cases) assert.deepEqual(announcedFormats(parseLinks(payload)), expected, payload);
  });

  it('orders the formats by version, announcement and kind of payload', () => {
    const base = { announced: [] as number[], preferred: undefined, remembered: undefined };
    // 1.0: TLV is mandatory; a single value tries TLV, then plain text.
    assert.deepEqual(formatsToTry({ ...base, lwm2mVersion: '1.0', kind: 'multiple' }), [TLV]);
    assert.deepEqual(formatsToTry({ ...base, lwm2mVersion: '1.0', kind: 'single' }), [TLV, TEXT]);
    // 1.1 announcing SenML JSON (Wakaama ct=110): asked in it first, never SenML CBOR before it.
    assert.deepEqual(formatsToTry({ ...base, lwm2mVersion: '1.1', announced: [SENML_JSON], kind: 'multiple' }).slice(0, 1), [SENML_JSON]);
    assert.deepEqual(formatsToTry({ ...base, lwm2mVersion: '1.1', announced: [SENML_JSON], kind: 'composite' }), [SENML_JSON, SENML_CBOR]);
    // 1.1 single values: plain text, which every 1.1 client must take.
    assert.equal(formatsToTry({ ...base, lwm2mVersion: '1.1', kind: 'single' })[0], TEXT);
    // 1.1 announcing nothing: SenML first (SHOULD), TLV last.
    assert.deepEqual(formatsToTry({ ...base, lwm2mVersion: '1.1', kind: 'multiple' }), [SENML_CBOR, SENML_JSON, TLV]);
    // 1.2 announcing LwM2M CBOR: single values in it.
    assert.equal(formatsToTry({ ...base, lwm2mVersion: '1.2', announced: [SENML_CBOR, LWM2M_CBOR], kind: 'single' })[0], LWM2M_CBOR);
    assert.equal(formatsToTry({ ...base, lwm2mVersion: '1.1', announced: [SENML_CBOR, LWM2M_CBOR], kind: 'single' })[0], TEXT, 'LwM2M CBOR is 1.2');
    // A preference and what worked come first; composite keeps to SenML whatever is preferred.
    assert.deepEqual(formatsToTry({ ...base, lwm2mVersion: '1.1', announced: [SENML_CBOR], kind: 'multiple', preferred: TLV }).slice(0, 2), [TLV, SENML_CBOR]);
    assert.deepEqual(formatsToTry({ ...base, lwm2mVersion: '1.1', kind: 'multiple', remembered: TLV })[0], TLV);
    assert.deepEqual(formatsToTry({ ...base, lwm2mVersion: '1.1', kind: 'composite', preferred: TLV }), [SENML_CBOR, SENML_JSON]);
  });
});
