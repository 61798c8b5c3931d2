import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { ERRORS } from '../../src/errors.js';
import { startService, type TestService } from '../helpers/service.js';

describe('API description and error catalogue', () => {
  let service: TestService;

  before(async () => {
    service = await startService('sqlite');
  });
  after(() => service?.stop());

  it('documents every error code in docs/errors.md with its status', async () => {
    const doc = await readFile('docs/errors.md', 'utf8');
    for (const [code, { status }] of Object.entries(ERRORS)) {
      assert.match(doc, new RegExp(`\\| \`${code}\` \\| ${status} \\|`), `${code} (${status}) is missing from docs/errors.md`);
    }
  });

  it('serves an OpenAPI 3 document describing every path the issue fixes, each with responses and a summary', async () => {
    const response = await service.request('GET', '/openapi.json', { token: null });
    assert.equal(response.status, 200);
    const doc = response.body as { openapi: string; paths: Record<string, Record<string, { summary?: string; responses?: Record<string, unknown> }>> };
    assert.match(doc.openapi, /^3\./);
    const expected: Record<string, string[]> = {
      '/auth/login': ['post'],
      '/auth/logout': ['post'],
      '/accounts': ['get', 'post'],
      '/accounts/{accountId}': ['get', 'put', 'delete'],
      '/tokens': ['get', 'post'],
      '/tokens/{id}': ['get', 'delete'],
      '/services': ['get', 'post'],
      '/services/{id}': ['get', 'put', 'delete'],
      '/endpoints': ['get', 'post', 'patch'],
      '/endpoints/{ref}': ['get', 'put', 'patch', 'delete'],
      '/endpoints/{ref}/storage/{name}': ['get', 'put', 'delete'],
      '/endpoint/count': ['get'],
      '/events/stream': ['get'],
      '/health': ['get'],
      '/lwm2m/objects': ['get', 'post'],
      '/lwm2m/objects/{objectId}': ['get', 'delete'],
    };
    for (const [path, methods] of Object.entries(expected)) {
      for (const method of methods) {
        const operation = doc.paths[path]?.[method];
        assert.ok(operation, `${method.toUpperCase()} ${path} is not in the OpenAPI document`);
        assert.ok(operation.summary, `${method.toUpperCase()} ${path} has no summary`);
        assert.ok(operation.responses && Object.keys(operation.responses).length > 0, `${method.toUpperCase()} ${path} has no responses`);
      }
    }
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) assert.ok(operation.summary, `${method} ${path} has no summary`);
    }
  });

  it('gives the one error body once, as a component every error response refers to', async () => {
    const response = await service.request('GET', '/openapi.json', { token: null });
    const doc = response.body as { paths: Record<string, Record<string, { responses?: Record<string, { content?: Record<string, { schema?: unknown }> }> }>>; components: { schemas: Record<string, { description?: string }> } };
    assert.equal(doc.components.schemas.ErrorBody?.description, 'The one error body of the API');
    const text = JSON.stringify(doc);
    // Once in ErrorBody, once in the per-item errors of POST /endpoints/bulk (it was about 450 times).
    assert.ok(text.split('"IOTB_REQUEST_VALIDATION"').length - 1 <= 2, 'the list of error codes is not repeated per response');
    const notFound = doc.paths['/endpoints/{ref}']?.get?.responses?.['404']?.content?.['application/json']?.schema;
    assert.deepEqual(notFound, { $ref: '#/components/schemas/ErrorBody' });
  });

  it('serves a docs page', async () => {
    const response = await fetch(`${service.baseUrl}/docs/`);
    assert.equal(response.status, 200);
    assert.match(await response.text(), /swagger/i);
  });

  it('answers unknown routes and oversized or non-JSON bodies with the one error shape', async () => {
    const unknown = await service.request('GET', '/no/such/route');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.code, 'IOTB_REQUEST_ROUTE_NOT_FOUND');
    const large = await service.request('POST', '/accounts', { body: { name: 'x'.repeat(2 * 1024 * 1024) } });
    assert.equal(large.status, 413);
    assert.equal(large.body.error.code, 'IOTB_REQUEST_BODY_TOO_LARGE');
    const text = await service.request('POST', '/accounts', { body: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    assert.equal(text.status, 415);
    assert.equal(text.body.error.code, 'IOTB_REQUEST_UNSUPPORTED_MEDIA_TYPE');
  });

  it('answers paths the router refuses (bad percent-encoding, a segment too long) with the one error shape', async () => {
    const malformed = await service.request('GET', '/endpoints/k.%E0%A4%A');
    assert.equal(malformed.status, 400);
    assert.equal(malformed.body.error.code, 'IOTB_REQUEST_VALIDATION');
    const long = await service.request('GET', `/endpoints/k.${'x'.repeat(2049)}`);
    assert.equal(long.status, 414);
    assert.equal(long.body.error.code, 'IOTB_REQUEST_PATH_TOO_LONG');
  });

  it('compiles each route schema at its first use, and every one of them compiles', async () => {
    // A query coerced and a body refused by validators compiled on these first requests.
    const created = await service.request('POST', '/services', { body: { name: 'lazy', type: 'mqtt' } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const limited = await service.request('GET', '/services?limit=1&offset=0');
    assert.equal(limited.status, 200, JSON.stringify(limited.body));
    assert.equal(limited.body.items.length, 1);
    const refused = await service.request('POST', '/services', { body: { type: 'mqtt' } });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.code, 'IOTB_REQUEST_VALIDATION');
    assert.match(refused.body.error.message, /name/);
    // What no request needed yet: every validator and serializer of every route, compiled now without an error.
    const left = service.bridge.http.compileRouteSchemas();
    assert.ok(left > 100, `${left} schemas were still to compile`);
    assert.equal(service.bridge.http.compileRouteSchemas(), 0, 'each compiled once');
  });
});
