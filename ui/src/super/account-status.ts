// Each listed account's suspension and limits (GET /super/accounts/{id}/limits), kept per account so that an
// action's answer replaces that account's alone.
import { useCallback, useEffect, useState } from 'react';
import { call, messageOf, type ApiClient, type ApiData } from '../api/client';
import type { paths } from '../api/schema';

export type AccountStatus = ApiData<'/super/accounts/{id}/limits'>;
export type SupportToken = paths['/super/impersonate']['post']['responses'][201]['content']['application/json'];
export type Limits = AccountStatus['limits'];

/** An account's status, or the API's message when it could not be read. */
export type StatusOf = AccountStatus | { readonly error: string };

export interface AccountStatuses {
  readonly statuses: ReadonlyMap<string, StatusOf>;
  /** An action answered the account's new status. */
  readonly update: (status: AccountStatus) => void;
}

/** The statuses of `accountIds` (one request each, together; a page holds at most 25). */
export function useAccountStatuses(api: ApiClient, accountIds: readonly string[]): AccountStatuses {
  const [statuses, setStatuses] = useState<ReadonlyMap<string, StatusOf>>(new Map());
  const key = accountIds.join(',');
  useEffect(() => {
    let current = true;
    const ids = key === '' ? [] : key.split(',');
    void Promise.all(
      ids.map(async (id): Promise<[string, StatusOf]> => {
        try {
          return [id, await call(api.GET('/super/accounts/{id}/limits', { params: { path: { id } } }))];
        } catch (error) {
          return [id, { error: messageOf(error) }];
        }
      }),
    ).then((entries) => {
      if (current) setStatuses(new Map(entries));
    });
    return () => {
      current = false;
    };
  }, [api, key]);
  const update = useCallback((status: AccountStatus) => setStatuses((previous) => new Map(previous).set(status.accountId, status)), []);
  return { statuses, update };
}

const NUMBER = new Intl.NumberFormat('en');

/** "100 endpoints · 5 events/s · 200 ms script/min", or "none". */
export function limitsText(limits: Limits): string {
  const parts = [
    limits.maxEndpoints === null ? undefined : `${NUMBER.format(limits.maxEndpoints)} endpoints`,
    limits.eventsPerSecond === null ? undefined : `${NUMBER.format(limits.eventsPerSecond)} events/s`,
    limits.scriptCpuMsPerMinute === null ? undefined : `${NUMBER.format(limits.scriptCpuMsPerMinute)} ms script/min`,
  ].filter((part) => part !== undefined);
  return parts.length === 0 ? 'none' : parts.join(' · ');
}
