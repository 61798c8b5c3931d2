import { call, type ApiClient } from '../api/client';
import { ALERTS_PAGE_SIZE, type AlertQuery } from './alert-query';
import type { AlertPage, AlertState } from './alert-types';

/** One page of `GET /alerts` in one state (or any, without `state`), with the query's other filters. */
function loadPage(api: ApiClient, query: AlertQuery, state: AlertState | undefined, offset: number, limit: number): Promise<AlertPage> {
  return call(
    api.GET('/alerts', {
      params: {
        query: {
          limit,
          offset,
          ...(state !== undefined && { state: [state] }),
          ...(query.severity !== '' && { severity: [query.severity] }),
          ...(query.tags.length > 0 && { tag: [...query.tags] }),
          ...(query.endpoint !== '' && { endpoint: query.endpoint }),
          ...(query.ruleId !== '' && { ruleId: query.ruleId }),
        },
      },
    }),
  );
}

/** A page of alerts and when it was asked for (epoch ms): the times in the list are shown relative to it. */
export type LoadedAlerts = AlertPage & { readonly at: number };

/**
 * The page of alerts the query asks for. The default view (no state) is the active alerts, the open ones first and
 * then the acknowledged, each newest first: the open ones' page, then as many acknowledged ones as it leaves room
 * for, counted on from where the open ones end.
 */
export async function loadAlerts(api: ApiClient, query: AlertQuery): Promise<LoadedAlerts> {
  const { offset } = query;
  const at = Date.now();
  if (query.state === 'all') return { ...(await loadPage(api, query, undefined, offset, ALERTS_PAGE_SIZE)), at };
  if (query.state !== '') return { ...(await loadPage(api, query, query.state, offset, ALERTS_PAGE_SIZE)), at };
  const open = await loadPage(api, query, 'open', offset, ALERTS_PAGE_SIZE);
  const room = ALERTS_PAGE_SIZE - open.items.length;
  // With no room left, one item is asked for its total only.
  const acknowledged = await loadPage(api, query, 'acknowledged', Math.max(0, offset - open.total), Math.max(room, 1));
  return {
    ...open,
    items: room > 0 ? [...open.items, ...acknowledged.items.slice(0, room)] : open.items,
    total: open.total + acknowledged.total,
    offset,
    limit: ALERTS_PAGE_SIZE,
    at,
  };
}
