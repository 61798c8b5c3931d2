import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CodecError, decodeLinks, encodeLinks, formatLinks, linkAttribute, parseLinks, type CoreLink } from '../../src/lwm2m/codecs/index.js';
import { text, utf8 } from '../helpers/lwm2m-models.js';

const targets = (links: readonly CoreLink[]) => links.map((link) => link.target);

describe('CoRE Link Format (RFC 6690)', () => {
  it('reads the Register payload of the example client (Core 6.2.1), as text or bytes', () => {
    const payload = '</1/0>,</1/1>,</2/0>,</2/1>,</2/2>,</2/3>,</2/4>,</3/0>,</4/0>,</5>';
    const expected = ['/1/0', '/1/1', '/2/0', '/2/1', '/2/2', '/2/3', '/2/4', '/3/0', '/4/0', '/5'];
    assert.deepEqual(targets(parseLinks(payload)), expected);
    assert.deepEqual(targets(decodeLinks(utf8(payload))), expected);
    assert.ok(parseLinks(payload).every((link) => link.attributes.length === 0));
    assert.equal(formatLinks(parseLinks(payload)), payload);
  });

  it('reads quoted and unquoted attributes, a ct list, and spaces after commas (Core 6.2.1, Transport 6.4.1)', () => {
    const [root] = parseLinks('</>;ct="110 112 60", </1/0>,</1/1>');
    assert.deepEqual(root, { target: '/', attributes: [{ name: 'ct', value: '110 112 60', quoted: true }] });
    assert.deepEqual(String(linkAttribute(root, 'ct')).split(' ').map(Number), [110, 112, 60]);
    const alternate = parseLinks('</lwm2m>;rt="oma.lwm2m", </lwm2m/1/0>,</lwm2m/3/0>');
    assert.equal(linkAttribute(alternate[0]!, 'rt'), 'oma.lwm2m');
    assert.equal(formatLinks(alternate), '</lwm2m>;rt="oma.lwm2m",</lwm2m/1/0>,</lwm2m/3/0>');
  });

  it('reads versions on object and instance links (Core 7.2.3 examples, and the brief’s "</3/0>;ver=1.1,</1/0>")', () => {
    assert.equal(linkAttribute(parseLinks('</1>;ver=1.0,</1/0>,</1/1>,</3/0>')[0]!, 'ver'), '1.0');
    assert.equal(linkAttribute(parseLinks('</1/0>,</1/1>,</3/0>,</44/0>;ver=2.2')[3]!, 'ver'), '2.2');
    assert.deepEqual(parseLinks('</3/0>;ver=1.1,</1/0>'), [
      { target: '/3/0', attributes: [{ name: 'ver', value: '1.1' }] },
      { target: '/1/0', attributes: [] },
    ]);
    // Leshan DefaultLinkParserTest parse_quoted_ver_attributes: a quoted version is the same value.
    assert.equal(linkAttribute(parseLinks('</1>;ver="2.2"')[0]!, 'ver'), '2.2');
  });

  it('reads the Discover answer of /3 with several attributes per link (Core 6.3.2)', () => {
    const links = parseLinks('</3>;pmin=10, </3/0>;pmax=60, </3/0/1>, </3/0/2>, </3/0/3>, </3/0/4>, </3/0/6>;dim=2, </3/0/7>;dim=2;gt=50;lt=42.2, </3/0/8>;dim=2, </3/0/11>, </3/0/16>');
    assert.equal(links.length, 11);
    assert.deepEqual(links[7], {
      target: '/3/0/7',
      attributes: [
        { name: 'dim', value: '2' },
        { name: 'gt', value: '50' },
        { name: 'lt', value: '42.2' },
      ],
    });
    assert.equal(formatLinks(links.slice(7, 8)), '</3/0/7>;dim=2;gt=50;lt=42.2');
  });

  it('reads the Bootstrap-Discover answer with quoted URIs and a trailing slash (Core 6.1.7.3)', () => {
    const links = parseLinks('</>;lwm2m=1.1,</0/0>;ssid=101;uri="coaps://server_1.example.com", </0/1/>, </0/2>;ssid=102;uri="coaps://server_2.example.com"');
    assert.deepEqual(targets(links), ['/', '/0/0', '/0/1/', '/0/2']);
    assert.equal(linkAttribute(links[0]!, 'lwm2m'), '1.1');
    assert.equal(linkAttribute(links[3]!, 'uri'), 'coaps://server_2.example.com');
  });

  it('reads the brief’s mixed example, including a relative reference "<1/1>"', () => {
    assert.deepEqual(targets(parseLinks('</3/0>;ver=1.1,</1/0>,<1/1>;pmin=10')), ['/3/0', '/1/0', '1/1']);
  });

  it('reads RFC 6690 section 5 style links: anchors, rel, several attributes, a valueless one', () => {
    const links = parseLinks(
      '</sensors>;ct=40;title="Sensor Index",</sensors/temp>;rt="temperature-c";if="sensor",' +
        '<http://www.example.com/sensors/t123>;anchor="/sensors/temp";rel="describedby",</t>;anchor="/sensors/temp";rel="alternate";obs',
    );
    assert.deepEqual(targets(links), ['/sensors', '/sensors/temp', 'http://www.example.com/sensors/t123', '/t']);
    assert.equal(linkAttribute(links[0]!, 'title'), 'Sensor Index');
    assert.equal(linkAttribute(links[3]!, 'obs'), true);
    assert.equal(linkAttribute(links[3]!, 'missing'), undefined);
  });

  it('takes URI-references and ptokens as RFC 6690 allows them (Leshan DefaultLinkParserTest)', () => {
    assert.deepEqual(targets(parseLinks("</uri>,</uri/>,</uri//>,</%20>,</-._~a-zA-Z0-9:@!$&'()*+,;=>")), ['/uri', '/uri/', '/uri//', '/%20', "/-._~a-zA-Z0-9:@!$&'()*+,;="]);
    assert.equal(linkAttribute(parseLinks("</foo>;param=!#$%&'()*+-.:<=>?@[]^_`{|}~a1z9")[0]!, 'param'), "!#$%&'()*+-.:<=>?@[]^_`{|}~a1z9");
    const [foo, bar] = parseLinks('</foo>;param=<,</bar>;param2=>');
    assert.equal(linkAttribute(foo!, 'param'), '<');
    assert.equal(linkAttribute(bar!, 'param2'), '>');
    assert.deepEqual(parseLinks('</>;rt="oma.lwm2m";ct=100;qs="quoted_string";us=unquoted_string,</1/101>,</2/1>;empty')[0]?.attributes.map((a) => a.name), ['rt', 'ct', 'qs', 'us']);
  });

  it('unescapes quoted-strings and escapes what needs it on the way out', () => {
    const [link] = parseLinks('</x>;title="a \\"quoted\\" \\\\ value, with; separators"');
    assert.equal(linkAttribute(link!, 'title'), 'a "quoted" \\ value, with; separators');
    assert.deepEqual(parseLinks(formatLinks([link!])), [link]);
    assert.equal(formatLinks([{ target: '/x', attributes: [{ name: 'title', value: 'two words' }] }]), '</x>;title="two words"');
    assert.equal(text(encodeLinks([{ target: '/', attributes: [{ name: 'rt', value: 'oma.lwm2m', quoted: true }] }])), '</>;rt="oma.lwm2m"');
  });

  it('reads an empty payload as no links', () => {
    assert.deepEqual(parseLinks(''), []);
    assert.deepEqual(parseLinks('  '), []);
  });

  const malformed: Array<[string, string, RegExp]> = [
    ['a missing "<"', '/1/0>', /a link starts with "<"/],
    ['a missing ">"', '</1/0', /"<" without a closing ">"/],
    ['a missing comma (Transport Figure 6.4.3.-1 erratum "</2/0></2/1>")', '</1/1>,</1/2>,</2/0></2/1>,</3/0>', /expected "," between links/],
    ['a newline instead of a comma (Core 6.4.4)', '</3>;pmin=60\n</4>;pmax=300', /expected "," between links/],
    ['a trailing comma', '</1/0>,', /trailing ","/],
    ['an empty parameter name', '</1/0>;=1', /expected a parameter name/],
    ['"=" without a value', '</1/0>;ver=', /has "=" but no value/],
    ['an unterminated quoted-string', '</>;rt="oma.lwm2m', /unterminated quoted-string/],
    ['a backslash at the very end', '</>;rt="oma\\', /unterminated quoted-string/],
    ['whitespace in a URI-reference', '</1 0>', /is not a URI-reference/],
    ['junk after a link', '</1/0> x', /expected "," between links, found "x"/],
    ['a bare parameter (the pre-1.2 "lwm2m=1.0," form)', 'lwm2m=1.0,</0/0>', /a link starts with "<"/],
    ['a quote inside a ptoken', '</1/0>;a=b"c', /expected "," between links/],
    ['broken UTF-8', '\u0000', /./],
  ];
  for (const [what, payload, message] of malformed) {
    it(`refuses ${what}`, () => {
      assert.throws(
        () => parseLinks(payload === '\u0000' ? new Uint8Array([0x3c, 0xc3, 0x28]) : payload),
        (error: unknown) => error instanceof CodecError && error.format === 'link' && message.test(error.message),
      );
    });
  }

  it('refuses to write what cannot be read back', () => {
    assert.throws(() => formatLinks([{ target: '/a>b', attributes: [] }]), CodecError);
    assert.throws(() => formatLinks([{ target: '/a', attributes: [{ name: 'bad name', value: '1' }] }]), CodecError);
  });

  it('says where the problem is', () => {
    assert.throws(() => parseLinks('</1/0>,</1/1>;ver="1.0'), { name: 'CodecError', offset: 18 });
  });
});
