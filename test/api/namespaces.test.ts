import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { runScript } from '../helpers/scripts.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

for (const dialect of DIALECTS) {
  describe(`script namespaces: endpoint, history, cache (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let account: TestAccount;
    let other: TestAccount;
    let serviceId: string;
    let otherEndpointId: string;
    const run = (script: string, event: { endpoint?: string; data?: unknown } = {}) => runScript(service, account.token, script, event);

    before(async () => {
      service = await startService(dialect.name);
      account = await createAccount(service, 'scripts');
      other = await createAccount(service, 'someone else');
      serviceId = await createService(service, account.token);
      await createEndpoint(service, account.token, { key: 'dev-1', serviceId, tags: ['site:berlin'], statusDetails: { secondsBeforeMissing: 60 } });
      const otherService = await createService(service, other.token);
      otherEndpointId = (await createEndpoint(service, other.token, { key: 'theirs', serviceId: otherService })).id;
      await service.request('PUT', '/endpoints/k.theirs/storage/secret', { token: other.token, body: { psk: 'other-secret' } });
    });
    after(() => service?.stop());

    it('endpoint: reads the event endpoint, stores objects, null when none (synchronous style)', async () => {
      const result = await run(
        `
        var e = endpoint.get(null);
        log(e.key, e.tags.join(','), e.statusDetails.secondsBeforeMissing);
        log(JSON.stringify(endpoint.storageGet(null, 'config')));
        endpoint.storageSet(null, 'config', { interval: 30 });
        log(JSON.stringify(endpoint.storageGet(null, 'config')), JSON.stringify(endpoint.storeGet('k.dev-1', 'config')));
        endpoint.storeSet(null, 'n', 5);
        log(endpoint.storageDelete(null, 'n'), endpoint.storageDelete(null, 'n'), endpoint.storageGet(null, 'n'));
      `,
        { endpoint: 'k.dev-1' },
      );
      assert.equal(result.status, 'success', `${result.error} line ${result.line}`);
      assert.deepEqual(result.logs, ['dev-1 site:berlin 60', 'null', '{"interval":30} {"interval":30}', 'true false null']);
      const stored = await service.request('GET', '/endpoints/k.dev-1/storage/config', { token: account.token });
      assert.deepEqual(stored.body.value, { interval: 30 }, 'what a script stores, the API reads');
    });

    it('endpoint: creates, updates, tags, searches and deletes', async () => {
      const result = await run(
        `
        var e = endpoint.create('made-by-script', null, { tags: ['auto'], statusDetails: { secondsBeforeMissing: 600 } });
        log(e.key, e.serviceId === event.serviceId);
        e = endpoint.update('k.made-by-script', { statusDetails: { note: 'x' }, parameters: { client_id: 'c-1' } });
        log(e.statusDetails.secondsBeforeMissing, e.statusDetails.note, e.parameters.client_id);
        e = endpoint.updateTags('k.made-by-script', ['floor:2'], ['auto']);
        log(e.tags.join(','));
        var found = endpoint.searchOne({ tags: ['floor:2'] });
        log(found.key, JSON.stringify(endpoint.searchOne({ tags: 'nothing-has-this' })));
        log(endpoint.delete('k.made-by-script'), JSON.stringify(endpoint.get('k.made-by-script')));
      `,
        { endpoint: 'k.dev-1' },
      );
      assert.equal(result.status, 'success', `${result.error} line ${result.line}`);
      assert.deepEqual(result.logs, ['made-by-script true', '600 x c-1', 'floor:2', 'made-by-script null', 'true null']);
    });

    it('endpoint: errors reach the script as errors, never as a blank object', async () => {
      const result = await run(`
        try { endpoint.update('k.missing', { tags: ['x'] }); log('no error'); } catch (e) { log(e.message); }
        try { endpoint.create('dev-1', event.serviceId); } catch (e) { log(e.message); }
        try { endpoint.storageGet(null, 'x'); } catch (e) { log(e.message); }
        endpoint.update('k.missing', {});
      `);
      assert.equal(result.status, 'failed');
      assert.deepEqual(result.logs.slice(0, 2), ['endpoint.update: No such endpoint', 'endpoint.create: serviceId is needed: the event has no service']);
      assert.match(result.logs[2] ?? '', /^endpoint\.storageGet: the event has no endpoint/);
      assert.equal(result.error, 'endpoint.update: No such endpoint');
      assert.equal(result.line, 5);
    });

    it("endpoint: never reaches another account's endpoints", async () => {
      const result = await run(`
        log(JSON.stringify(endpoint.get('${otherEndpointId}')), JSON.stringify(endpoint.get('k.theirs')));
        try { endpoint.storageGet('${otherEndpointId}', 'secret'); } catch (e) { log(e.message); }
        try { endpoint.storageSet('${otherEndpointId}', 'secret', 'mine'); } catch (e) { log(e.message); }
        try { endpoint.delete('${otherEndpointId}'); } catch (e) { log(e.message); }
        try { endpoint.create('x', '${(await service.request('GET', '/services', { token: other.token })).body.items[0].id}'); } catch (e) { log(e.message); }
        log(JSON.stringify(endpoint.searchOne({ keyPrefix: 'theirs' })));
      `);
      assert.equal(result.status, 'success', result.error ?? '');
      assert.deepEqual(result.logs, [
        'null null',
        'endpoint.storageGet: No such endpoint',
        'endpoint.storageSet: No such endpoint',
        'endpoint.delete: No such endpoint',
        'endpoint.create: No such service',
        'null',
      ]);
      const theirs = await service.request('GET', '/endpoints/k.theirs/storage/secret', { token: other.token });
      assert.deepEqual(theirs.body.value, { psk: 'other-secret' });
    });

    it('history: one returns null when nothing matches; search pages with next', async () => {
      for (let i = 0; i < 5; i++) await service.request('POST', '/events', { token: account.token, body: { type: 'meter', endpoint: 'k.dev-1', data: { i } } });
      await service.request('POST', '/events', { token: other.token, body: { type: 'only-theirs' } });
      const result = await run(`
        log(JSON.stringify(history.one({ type: 'never-happened' })));
        log(history.one({ type: 'meter' }).data.i, history.one({ type: 'meter', endpoint: 'k.dev-1' }).endpointKey);
        var seen = [], next = null;
        do { var page = history.search({ type: 'meter' }, next, { limit: 2 }); page.items.forEach(function (e) { seen.push(e.data.i); }); next = page.next; } while (next);
        log(seen.join(','));
        log(JSON.stringify(history.one({ type: 'only-theirs' })));
      `);
      assert.equal(result.status, 'success', `${result.error} line ${result.line}`);
      assert.deepEqual(result.logs, ['null', '4 dev-1', '4,3,2,1,0', 'null']);
    });

    it('cache: strings, objects, atomic counters, private to the account', async () => {
      const result = await run(`
        log(JSON.stringify(cache.get('k')));
        cache.set('k', 'v'); log(cache.get('k'));
        cache.set2('o', { a: [1, 2] }); log(JSON.stringify(cache.get2('o')));
        log(cache.incr('n'), cache.incr('n'), cache.incr('n', 10));
        try { cache.set('bad', { not: 'a string' }); } catch (e) { log(e.message); }
        log(cache.delete('k'), JSON.stringify(cache.get('k')));
      `);
      assert.equal(result.status, 'success', `${result.error} line ${result.line}`);
      assert.deepEqual(result.logs, [
        'null',
        'v',
        '{"a":[1,2]}',
        '1 2 12',
        'cache.set: cache.set stores strings (and numbers, booleans); use set2 for objects',
        'true null',
      ]);
      const theirs = await runScript(service, other.token, `log(JSON.stringify(cache.get2('o')), JSON.stringify(cache.get('n')));`);
      assert.deepEqual(theirs.logs, ['null null']);
      const counters = await Promise.all(Array.from({ length: 5 }, () => run(`cache.incr('shared');`)));
      assert.ok(counters.every((r) => r.status === 'success'));
      assert.deepEqual((await run(`log(cache.get('shared'))`)).logs, ['5'], 'incr is atomic across concurrent runs');
    });

    it('pure namespaces (convert, date, hash, json, network, geospatial, string) answer inside the worker', async () => {
      const result = await run(`
        log(hash.crc32('123456789'), hash.crc64('123456789'), hash.sha256('abc').slice(0, 8));
        log(date.format('2026-07-01T12:00:00Z', 'HH:mm Z', 'Europe/Berlin'), /\\+09:00$/.test(date.now('Asia/Tokyo')));
        log(JSON.stringify(json.patchApply({ a: 1 }, json.patchCreate({ a: 1 }, { a: 2, b: [1] }))));
        log(network.isIpInCidrs('10.1.2.3', ['10.0.0.0/8']), network.splitHostPort('h:1').port, convert.mccmnc('26201').mnc);
        log(Math.round(geospatial.geodist(48.8566, 2.3522, 51.5074, -0.1278) / 1000), convert.hexToInt('ff38', true), convert.imeisvToimei('4901542032375100'));
        log(JSON.stringify(string.delimitedStringToObject('a=1,b=x')), JSON.stringify(convert.flattenObject({ a: { b: 1 } })));
        try { date.now('Mars/Olympus'); } catch (e) { log(e.message); }
      `);
      assert.equal(result.status, 'success', `${result.error} line ${result.line}`);
      assert.deepEqual(result.logs, [
        '3421780262 995dc9bbdf1939fa ba7816bf',
        '14:00 +02:00 true',
        '{"a":2,"b":[1]}',
        'true 1 01',
        '344 -200 490154203237518',
        '{"a":1,"b":"x"} {"a.b":1}',
        'date.now: unknown timezone "Mars/Olympus"',
      ]);
    });

    it('convert.binReader and bitReader read device payloads, with status functions', async () => {
      const result = await run(`
        var r = convert.binReader('01ff38fffffe41a80000abcdef48690a');
        log(r.readUint8(), r.readInt16(), r.readInt24(), r.position(), r.remaining());
        log(r.readFloat32(), r.readBytes(3), r.readString(2), r.length(), r.eof());
        var le = convert.binReader('3412', true); log(le.readUint16());
        var b = convert.bitReader('b5'); log(b.readBits(3), b.readBool(), b.readSignedBits(4), b.eof(), b.position());
        try { r.readUint32(); } catch (e) { log(e.message); }
        var u = convert.binReader('ffffff'); log(u.readUint24());
        log(JSON.stringify(convert.cborToObject('a26161016162820203')));
      `);
      assert.equal(result.status, 'success', `${result.error} line ${result.line}`);
      assert.deepEqual(result.logs, [
        '1 -200 -2 6 10',
        '21 abcdef Hi 16 false',
        '4660',
        '5 true 5 true 8',
        'binReader: read past the end (4 bytes at 15 of 16)',
        '16777215',
        '{"a":1,"b":[2,3]}',
      ]);
    });

    it('the rest of convert, hash and network answer inside the sandbox too', async () => {
      const proto = 'syntax = \\"proto3\\"; message M { int32 a = 1; }';
      const result = await run(`
        var proto = "${proto}";
        log(hash.crc64signed('123456789'), JSON.stringify(network.decodeMccMnc('310410')));
        log(convert.intToHex(-200, 2), convert.binToStr(convert.strToBin('Grüße')), JSON.stringify(convert.delimitedStringToObject('a:1;b:ff', ';', ':', { intHex: true })));
        log(JSON.stringify(convert.xmlToObject('<r><v>1</v></r>')), JSON.stringify(convert.csvToObjects('k,v\\nx,1')));
        log(convert.objectToCbor({ a: 1 }), JSON.stringify(convert.msgPackToObject('81a16101')));
        log(convert.objectToProtobuf({ a: 150 }, proto, 'M'), JSON.stringify(convert.protobufToObject('089601', proto, 'M')));
      `);
      assert.equal(result.status, 'success', `${result.error} line ${result.line}`);
      assert.deepEqual(result.logs, [
        `${BigInt.asIntN(64, 0x995dc9bbdf1939fan)} {"mcc":"310","mnc":"410"}`,
        'ff38 Grüße {"a":1,"b":255}',
        '{"r":{"v":1}} [{"k":"x","v":"1"}]',
        'a1616101 {"a":1}',
        '089601 {"a":150}',
      ]);
    });
  });
}
