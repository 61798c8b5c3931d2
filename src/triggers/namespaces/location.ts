import { AppError } from '../../errors.js';
import { deviceCall, endpointRef, numberArg, objectArg, optionalString, ScriptArgumentError, stringArg, type Namespace } from './namespace.js';

/**
 * `location.*`: the account's geolocation and geocoding (docs/location.md "Scripts"), the same as
 * `POST /location/geolocate`, `GET /location/forward` and `GET /location/reverse`. Failures reach the script
 * as `IOTB_CODE: message`.
 */
export const locationNamespace: Namespace = {
  name: 'location',
  functions: {
    /**
     * location.geolocate({cells, wifi, ip}, {endpoint, setPosition}?) → {lat, lon, accuracy, source, provider} or null
     * when no location service knows a position. With `setPosition: true` the answer becomes the endpoint's
     * (the event's, or `endpoint`) last known position. Example: `var p = location.geolocate({cells: [{radioType:
     * 'lte', mcc: 262, mnc: 1, tac: 100, cellId: 12345}]}); if (p) log(p.lat, p.lon);`
     */
    geolocate: async (context, args) => {
      const request = objectArg(args, 0, 'request');
      const options = (args[1] ?? {}) as Record<string, unknown>;
      if (typeof options !== 'object' || options === null) throw new ScriptArgumentError('options must be an object');
      const found = await deviceCall(async () => {
        try {
          return await context.domain.location.geolocation.locate(context.scope, request);
        } catch (error) {
          if (error instanceof AppError && error.code === 'IOTB_LOCATION_NOT_FOUND') return null;
          throw error;
        }
      });
      if (found && options.setPosition === true) {
        const ref = endpointRef(context, options.endpoint);
        await deviceCall(() => context.domain.location.positions.set(context.scope, ref, { lat: found.lat, lon: found.lon, accuracy: found.accuracy }, 'geolocate'));
      }
      return found;
    },
    /** location.forward(query, {country, limit}?) → places by name, best first: [{name, country, lat, lon, …}]. */
    forward: async (context, args) => {
      const query = stringArg(args, 0, 'query');
      const options = (args[1] ?? {}) as { country?: unknown; limit?: unknown };
      const country = optionalString([options.country], 0, 'country');
      const limit = options.limit === undefined ? undefined : numberArg([options.limit], 0, 'limit');
      return (await deviceCall(() => context.domain.location.geocoding.forward(context.scope, query, { country, limit }))).items;
    },
    /** location.reverse(lat, lon) → the nearest place {name, country, lat, lon, distance (m), …}. */
    reverse: async (context, args) => {
      const lat = numberArg(args, 0, 'lat');
      const lon = numberArg(args, 1, 'lon');
      return deviceCall(() => context.domain.location.geocoding.reverse(context.scope, lat, lon));
    },
  },
};
