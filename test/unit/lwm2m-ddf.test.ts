import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { renderModule, shippedFromXml } from '../../scripts/generate-object-definitions.js';
import { DDF_MAX_BYTES, DdfError, parseDdf } from '../../src/lwm2m/objects/ddf.js';
import { fromObjectJson, toObjectJson } from '../../src/lwm2m/objects/object-json.js';
import { SHIPPED_OBJECTS } from '../../src/lwm2m/objects/shipped.generated.js';

const DEFINITIONS = 'src/lwm2m/objects/definitions';
const definition = (file: string) => readFileSync(path.join(DEFINITIONS, file), 'utf8');

/** A one-object document; `items` is the inside of <Resources>. */
function ddf(items: string, object: { id?: string; name?: string; extra?: string } = {}): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<LWM2M xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="http://openmobilealliance.org/tech/profiles/LWM2M.xsd">
  <Object ObjectType="MODefinition">
    <Name>${object.name ?? 'Test Object'}</Name>
    <Description1>A test object</Description1>
    ${object.id === undefined ? '<ObjectID>33000</ObjectID>' : object.id}
    <ObjectURN>urn:oma:lwm2m:x:33000</ObjectURN>
    <LWM2MVersion>1.1</LWM2MVersion>
    <ObjectVersion>2.0</ObjectVersion>
    <MultipleInstances>Multiple</MultipleInstances>
    <Mandatory>Optional</Mandatory>
    ${object.extra ?? ''}
    <Resources>${items}</Resources>
  </Object>
</LWM2M>`;
}

function item(id: string, fields: Partial<Record<'Name' | 'Operations' | 'MultipleInstances' | 'Mandatory' | 'Type', string>> = {}): string {
  const all = { Name: 'Value', Operations: 'R', MultipleInstances: 'Single', Mandatory: 'Mandatory', Type: 'Float', ...fields };
  const elements = Object.entries(all).map(([name, value]) => `<${name}>${value}</${name}>`).join('');
  return `<Item ${id}>${elements}<RangeEnumeration/><Units/><Description>d</Description></Item>`;
}

function rejects(xml: string, what: RegExp, where?: RegExp): DdfError {
  let caught: unknown;
  try {
    parseDdf(xml);
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof DdfError, `expected a DdfError, got ${String(caught)}`);
  assert.match(caught.what, what);
  if (where) assert.match(caught.where, where);
  assert.equal(caught.message, `${caught.where}: ${caught.what}`);
  return caught;
}

describe('DDF parser on the shipped OMA definitions', () => {
  it('parses the Device object (3.xml) with ids, types, operations, units and descriptions', () => {
    const [device, ...rest] = parseDdf(definition('3.xml'));
    assert.equal(rest.length, 0);
    assert.ok(device);
    assert.deepEqual(
      { id: device.id, name: device.name, version: device.version, lwm2mVersion: device.lwm2mVersion, urn: device.urn, multiple: device.multiple, mandatory: device.mandatory },
      { id: 3, name: 'Device', version: '1.2', lwm2mVersion: '1.1', urn: 'urn:oma:lwm2m:oma:3:1.2', multiple: false, mandatory: true },
    );
    assert.match(device.description ?? '', /^This LwM2M Object provides a range of device related information/);
    assert.equal(device.resources.size, 23);
    assert.deepEqual(device.resources.get(9), {
      id: 9,
      name: 'Battery Level',
      operations: 'R',
      multiple: false,
      mandatory: false,
      type: 'integer',
      rangeEnumeration: '0..100',
      units: '/100',
      description:
        'Contains the current battery level as a percentage (with a range from 0 to 100). This value is only valid for the Device internal Battery if present (one Available Power Sources Resource Instance is 1).',
    });
    // Executable resources have no data type (Core Appendix D: empty <Type>).
    assert.deepEqual([device.resources.get(4)?.operations, device.resources.get(4)?.type], ['E', 'none']);
    assert.equal(device.resources.get(11)?.multiple, true);
    assert.equal(device.resources.get(13)?.type, 'time');
    assert.equal(device.resources.get(22)?.type, 'objlnk');
    // Multi-line CDATA descriptions keep their lines, without the surrounding whitespace.
    assert.match(device.resources.get(6)?.description ?? '', /^0: DC power\n1: Internal Battery\n/);
  });

  it('parses every shipped file, one object each, named after its id', () => {
    const files = readdirSync(DEFINITIONS).filter((file) => file.endsWith('.xml'));
    assert.ok(files.length >= 28);
    for (const file of files) {
      const models = parseDdf(definition(file));
      assert.equal(models.length, 1, file);
      assert.equal(`${models[0]!.id}.xml`, file);
      assert.ok(models[0]!.resources.size > 0, file);
    }
  });

  it('reads the details real files differ in: bootstrap-only operations, unsigned, <Units/>, missing <RangeEnumeration>, element order', () => {
    const [security] = parseDdf(definition('0.xml'));
    assert.equal(security?.resources.get(0)?.operations, '');
    assert.equal(security?.resources.get(0)?.name, 'LWM2M Server URI', 'whitespace runs in names collapse');
    assert.equal(security?.resources.get(13)?.type, 'unsigned');
    const [server] = parseDdf(definition('1.xml'));
    assert.equal(server?.resources.get(27)?.units, undefined);
    const [location] = parseDdf(definition('6.xml'));
    // Items 8-12 of object 6 list <Type> before <Operations> and have no <RangeEnumeration>.
    assert.deepEqual(location?.resources.get(12), {
      id: 12,
      name: 'Location Changed',
      operations: 'R',
      multiple: false,
      mandatory: false,
      type: 'boolean',
      rangeEnumeration: undefined,
      units: undefined,
      description: 'True if the current position is distant more than the configured threshold from the expected location',
    });
    assert.equal(location?.urn, 'urn:oma:lwm2m:oma:6');
    const [temperature] = parseDdf(definition('3303.xml'));
    assert.deepEqual([...(temperature?.resources.keys() ?? [])], [5700, 5601, 5602, 5603, 5604, 5701, 5605]);
  });

  it('keeps the generated module in step with the XML files (run scripts/generate-object-definitions.ts)', () => {
    assert.deepEqual(SHIPPED_OBJECTS, shippedFromXml());
    assert.equal(readFileSync('src/lwm2m/objects/shipped.generated.ts', 'utf8'), renderModule(shippedFromXml()));
  });

  it('round-trips models through JSON', () => {
    for (const json of SHIPPED_OBJECTS) assert.deepEqual(toObjectJson(fromObjectJson(json)), json);
  });
});

describe('DDF parser on crafted documents', () => {
  it('parses several objects from one document, with defaults for optional elements', () => {
    const xml = `<LWM2M>
      <Object ObjectType="MODefinition"><Name>First</Name><ObjectID>2048</ObjectID><MultipleInstances>Single</MultipleInstances><Mandatory>Optional</Mandatory>
        <Resources>${item('ID="1"', { Type: 'String', Operations: 'RW' })}</Resources></Object>
      <Object ObjectType="MODefinition"><Name>Second</Name><ObjectID>500</ObjectID><MultipleInstances>multiple</MultipleInstances><Mandatory>mandatory</Mandatory>
        <Resources/></Object>
    </LWM2M>`;
    const [first, second] = parseDdf(xml);
    assert.deepEqual([first?.id, first?.version, first?.lwm2mVersion, first?.urn, first?.description], [2048, '1.0', '1.0', 'urn:oma:lwm2m:ext:2048', undefined]);
    assert.equal(first?.resources.get(1)?.type, 'string');
    assert.deepEqual([second?.id, second?.urn, second?.multiple, second?.mandatory, second?.resources.size], [500, 'urn:oma:lwm2m:oma:500', true, true, 0]);
  });

  it('decodes the predefined XML entities and character references', () => {
    const [model] = parseDdf(ddf(item('ID="0"', { Name: 'Tom &amp; Jerry &#x263A;' })));
    assert.equal(model?.resources.get(0)?.name, 'Tom & Jerry \u263A');
  });

  it('rejects missing, non-numeric and out-of-range ids, saying where', () => {
    rejects(ddf(item('ID="0"'), { id: '' }), /<ObjectID> is missing/, /^Object #1$/);
    rejects(ddf(item('ID="0"'), { id: '<ObjectID>abc</ObjectID>' }), /ObjectID "abc" is not a decimal number/);
    rejects(ddf(item('ID="0"'), { id: '<ObjectID>65536</ObjectID>' }), /ObjectID 65536 is out of range 0\.\.65535/);
    rejects(ddf(item('ID="0"'), { id: '<ObjectID>-1</ObjectID>' }), /not a decimal number/);
    rejects(ddf(item('')), /the ID attribute is missing/, /^Object 33000 \(Test Object\), Item #1$/);
    rejects(ddf(item('ID="5x"')), /ID "5x" is not a decimal number/);
    rejects(ddf(item('ID="70000"')), /ID 70000 is out of range/, /Item #1/);
  });

  it('rejects duplicate resource ids and duplicate objects', () => {
    rejects(ddf(item('ID="7"') + item('ID="7"')), /resource 7 is defined twice/, /Object 33000 \(Test Object\), Item 7/);
    const object = '<Object><Name>X</Name><ObjectID>9000</ObjectID><MultipleInstances>Single</MultipleInstances><Mandatory>Optional</Mandatory><Resources/></Object>';
    rejects(`<LWM2M>${object}${object}</LWM2M>`, /object 9000 is defined twice/);
  });

  it('rejects unknown types, operations and instance/mandatory words', () => {
    rejects(ddf(item('ID="1"', { Type: 'Decimal' })), /<Type> "Decimal" is not one of String, Integer/, /Item 1/);
    rejects(ddf(item('ID="1"', { Operations: 'RWX' })), /<Operations> "RWX" is not one of/);
    rejects(ddf(item('ID="1"', { MultipleInstances: 'Many' })), /<MultipleInstances> "Many" is not Multiple or Single/);
    rejects(ddf(item('ID="1"', { Mandatory: '' })), /<Mandatory> is missing/);
    rejects(ddf(item('ID="1"', { Name: ' ' })), /<Name> is missing/);
    rejects(ddf(item('ID="1"'), { extra: '<ObjectVersion>latest</ObjectVersion>' }), /<ObjectVersion> appears more than once/);
  });

  it('rejects documents that are not DDF', () => {
    rejects('', /empty/);
    rejects('<LWM2M><Object>', /not well-formed XML/, /^line \d+, column \d+$/);
    rejects('<Objects><Object/></Objects>', /root element must be <LWM2M>/);
    rejects('<LWM2M></LWM2M>', /no <Object> element/);
    rejects(ddf('<Item ID="1"><Name><b>bold</b></Name></Item>'), /<Name> must hold text, not elements/);
  });
});

describe('DDF parser against hostile XML', () => {
  it('refuses entity declarations, so "billion laughs" never expands', () => {
    const laughs = `<?xml version="1.0"?>
<!DOCTYPE lolz [
  <!ENTITY lol "lol">
  <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
  <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
${ddf(item('ID="0"', { Name: '&lol9;' }))}`;
    const started = performance.now();
    rejects(laughs, /DOCTYPE and ENTITY declarations are not allowed/, /^document$/);
    assert.ok(performance.now() - started < 1000);
  });

  it('refuses external entities (XXE) and a bare DOCTYPE', () => {
    rejects(`<!DOCTYPE LWM2M [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>${ddf(item('ID="0"', { Name: '&xxe;' }))}`, /DOCTYPE/);
    rejects(`<!DOCTYPE LWM2M SYSTEM "http://example.com/evil.dtd">${ddf(item('ID="0"'))}`, /DOCTYPE/);
  });

  it('leaves undeclared entity references as text instead of resolving them', () => {
    const [model] = parseDdf(ddf(item('ID="0"', { Name: 'a &xxe; b' })));
    assert.doesNotMatch(model?.resources.get(0)?.name ?? '', /root:/);
  });

  it('allows the word DOCTYPE inside descriptions', () => {
    const [model] = parseDdf(ddf('<Item ID="0"><Name>N</Name><Operations>R</Operations><MultipleInstances>Single</MultipleInstances><Mandatory>Optional</Mandatory><Type>String</Type><Description><![CDATA[Never send <!DOCTYPE here]]></Description></Item>'));
    assert.equal(model?.resources.get(0)?.description, 'Never send <!DOCTYPE here');
  });

  it('refuses documents over the size limit before parsing them', () => {
    const big = ddf(`<!-- ${'x'.repeat(DDF_MAX_BYTES)} -->${item('ID="0"')}`);
    rejects(big, /bytes; at most 1048576 are accepted/, /^document$/);
    assert.throws(() => parseDdf(ddf(item('ID="0"')), { maxBytes: 100 }), DdfError);
  });

  it('refuses deep nesting and many objects', () => {
    rejects(ddf(`<Item ID="0"><Name>${'<a>'.repeat(500)}x${'</a>'.repeat(500)}</Name></Item>`), /cannot be read: Maximum nested tags/);
    const object = (id: number) => `<Object><Name>O${id}</Name><ObjectID>${id}</ObjectID><MultipleInstances>Single</MultipleInstances><Mandatory>Optional</Mandatory></Object>`;
    rejects(`<LWM2M>${Array.from({ length: 101 }, (_, i) => object(i)).join('')}</LWM2M>`, /101 objects; at most 100/);
  });

  it('refuses element names that could reach the prototype', () => {
    rejects(ddf(item('ID="0"'), { extra: '<__proto__><polluted>yes</polluted></__proto__>' }), /cannot be read/, /^document$/);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });
});
