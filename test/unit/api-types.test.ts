// The web UI calls the API only through types generated from the service's OpenAPI document
// (ui/src/api/schema.d.ts). A route or schema change that was not regenerated fails here; once regenerated, a
// UI that no longer fits fails the typecheck (npm run typecheck covers ui/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { API_TYPES_DIR, OPENAPI_FILE, SCHEMA_FILE, generateApiTypes } from '../../scripts/generate-api-types.js';

/** The product version changes with every release and says nothing about the API's shape. */
function withoutVersion(document: string): unknown {
  const parsed = JSON.parse(document);
  delete parsed.info.version;
  return parsed;
}

test('ui/src/api/openapi.json and schema.d.ts are what the service generates now (else: npm run generate:api)', async () => {
  const fresh = await generateApiTypes();
  const committed = {
    openapi: readFileSync(path.join(API_TYPES_DIR, OPENAPI_FILE), 'utf8'),
    schema: readFileSync(path.join(API_TYPES_DIR, SCHEMA_FILE), 'utf8'),
  };
  const stale = 'the API changed since ui/src/api was generated: run npm run generate:api, then npm run typecheck and fix the UI where it no longer fits';
  assert.ok(committed.schema === fresh.schema, `${SCHEMA_FILE}: ${stale}`);
  assert.deepEqual(withoutVersion(committed.openapi), withoutVersion(fresh.openapi), `${OPENAPI_FILE}: ${stale}`);
});
