import type { HistorySearch } from '../../events/history.js';
import { numberArg, objectArg, optionalString, stringField, stringListField, type Namespace } from './namespace.js';

function search(query: Record<string, unknown>): HistorySearch {
  return {
    types: stringListField(query, 'type') ?? stringListField(query, 'types'),
    endpoint: stringField(query, 'endpoint'),
    serviceId: stringField(query, 'serviceId'),
    from: stringField(query, 'from'),
    to: stringField(query, 'to'),
  };
}

/** `history.*`: the account's event history, newest first (the same search as GET /history). */
export const historyNamespace: Namespace = {
  name: 'history',
  functions: {
    /** history.one({type?, endpoint?, serviceId?, from?, to?}) → the newest matching event, or null. */
    one: (context, args) => context.domain.history.one(context.scope, search(objectArg(args, 0, 'query'))),
    /** history.search(query, next?, {limit?}) → {items, next}: pass `next` back for older events; null at the end. */
    search: async (context, args) => {
      const options = objectArg(args, 2, 'options');
      const limit = numberArg([options.limit], 0, 'options.limit', 100);
      const page = await context.domain.history.search(context.scope, search(objectArg(args, 0, 'query')), optionalString(args, 1, 'next'), limit);
      return { items: page.items, next: page.next };
    },
  },
};
