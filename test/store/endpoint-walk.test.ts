import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createAccount, createEndpoint, createService, type TestAccount } from '../helpers/fixtures.js';
import { DIALECTS, startService, type TestService } from '../helpers/service.js';

/** `Endpoints.walk` (the export's keyset walk): every endpoint of the account once, in key order, whatever the page size. */
for (const dialect of DIALECTS) {
  describe(`walking every endpoint of an account (${dialect.name})`, { skip: dialect.skip }, () => {
    let service: TestService;
    let account: TestAccount;
    let other: TestAccount;

    before(async () => {
      service = await startService(dialect.name);
      account = await createAccount(service, 'walker');
      other = await createAccount(service, 'walker-other');
      const first = await createService(service, account.token, { name: 'first', type: 'mqtt' });
      const second = await createService(service, account.token, { name: 'second', type: 'udp' });
      const others = await createService(service, other.token, { name: 'others', type: 'lora' });
      // The same keys in two services: pages must not stop or repeat inside a run of equal keys.
      for (const key of ['b', 'a', 'c', 'd', 'a-1', 'e']) await createEndpoint(service, account.token, { key, serviceId: first });
      for (const key of ['a', 'c', 'c-0', 'e']) await createEndpoint(service, account.token, { key, serviceId: second });
      for (const key of ['a', 'b', 'z']) await createEndpoint(service, other.token, { key, serviceId: others });
    });

    after(async () => {
      await service.stop();
    });

    const walked = async (accountId: string, pageSize: number) => {
      const scope = await service.bridge.domain.accounts.platformScope(accountId, 'test');
      const pages: string[][] = [];
      for await (const page of service.bridge.domain.endpoints.walk(scope, pageSize)) pages.push(page.map((endpoint) => endpoint.key));
      return pages;
    };

    it('yields each endpoint once in key order, for every page size', async () => {
      const expected = ['a', 'a', 'a-1', 'b', 'c', 'c', 'c-0', 'd', 'e', 'e'];
      for (const size of [1, 2, 3, 4, 9, 10, 11, 1000]) {
        const pages = await walked(account.accountId, size);
        assert.deepEqual(pages.flat(), expected, `page size ${size}`);
        assert.ok(pages.every((page) => page.length > 0 && page.length <= size), `page size ${size}: ${JSON.stringify(pages)}`);
      }
    });

    it("never reaches another account's endpoints", async () => {
      assert.deepEqual((await walked(other.accountId, 2)).flat(), ['a', 'b', 'z']);
      const empty = await createAccount(service, 'walker-empty');
      assert.deepEqual(await walked(empty.accountId, 2), []);
    });
  });
}
