import { numberArg, objectArg, type Namespace } from './namespace.js';

/** `activity.*`: what happened in the account lately. */
export const activityNamespace: Namespace = {
  name: 'activity',
  functions: {
    /**
     * activity.getAll({limit = 50}) → the latest events and trigger executions of the account, newest first:
     * `{kind: "event", time, type, endpointKey, id}` and `{kind: "execution", time, triggerId, status, error, id}`.
     */
    getAll: async (context, args) => {
      const limit = Math.min(Math.max(Math.floor(numberArg([objectArg(args, 0, 'options').limit], 0, 'limit', 50)), 1), 500);
      const [events, executions] = await Promise.all([
        context.domain.history.search(context.scope, {}, undefined, limit),
        context.domain.executions.list(context.scope, {}, { limit, offset: 0 }),
      ]);
      const items = [
        ...events.items.map((e) => ({ kind: 'event', time: e.time, id: e.id, type: e.type, endpointKey: e.endpointKey })),
        ...executions.items.map((x) => ({ kind: 'execution', time: x.startedAt, id: x.id, triggerId: x.triggerId, status: x.status, error: x.error })),
      ];
      return items.sort((a, b) => (a.time < b.time ? 1 : a.time > b.time ? -1 : 0)).slice(0, limit);
    },
  },
};
