import { AppError } from '../../errors.js';
import { deviceCall, endpointRef, objectArg, ScriptArgumentError, stringArg, stringListField, type Namespace } from './namespace.js';

/**
 * `geofence.*`: the account's geofences (docs/location.md "Geofences"). `eval` is what turns positions into
 * `geofence` events; the others read.
 */
export const geofenceNamespace: Namespace = {
  name: 'geofence',
  functions: {
    /**
     * geofence.eval(endpoint, {lat, lon, accuracy}, {tags, inside}?) → {transitions: [{transition, geofenceId, name,
     * tags, dwellSeconds}], inside: [ids]}. Emits one `geofence` event per transition (`enter`, `exit`, and with
     * `inside: true` also `inside`); the position becomes the endpoint's last known one. `endpoint` null: the
     * event's. Example: `geofence.eval(null, {lat: event.data.lat, lon: event.data.lon});`
     */
    eval: async (context, args) => {
      const ref = endpointRef(context, args[0]);
      const position = objectArg(args, 1, 'position');
      const options = (args[2] ?? {}) as Record<string, unknown>;
      if (typeof options !== 'object' || options === null) throw new ScriptArgumentError('options must be an object');
      const accuracy = position.accuracy;
      if (accuracy !== undefined && (typeof accuracy !== 'number' || !(accuracy >= 0))) throw new ScriptArgumentError('accuracy is a number of metres ≥ 0');
      const result = await deviceCall(() =>
        context.domain.location.geofences.evaluate(context.scope, ref, position, {
          tags: stringListField(options, 'tags'),
          inside: options.inside === true,
          accuracy: accuracy,
          source: 'script',
        }),
      );
      return { transitions: result.transitions, inside: result.inside };
    },
    /** geofence.get(id) → the geofence {id, name, tags, geometry | circle, …} or null. */
    get: async (context, args) => {
      try {
        return await context.domain.location.geofences.get(context.scope, stringArg(args, 0, 'id'));
      } catch (error) {
        if (error instanceof AppError && error.code === 'IOTB_GEOFENCE_NOT_FOUND') return null;
        throw error;
      }
    },
    /** geofence.contains(id, {lat, lon}) → whether the point is inside the geofence (its edge counts as inside); no state, no event. */
    contains: async (context, args) => {
      const id = stringArg(args, 0, 'id');
      return deviceCall(() => context.domain.location.geofences.contains(context.scope, id, args[1]));
    },
  },
};
