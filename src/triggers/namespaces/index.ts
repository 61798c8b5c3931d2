import { cacheNamespace } from './cache.js';
import { endpointNamespace } from './endpoint.js';
import { historyNamespace } from './history.js';
import type { Namespace } from './namespace.js';

/** Every namespace scripts can call in the service; add a module here to add one. */
export const SERVICE_NAMESPACES: readonly Namespace[] = [endpointNamespace, historyNamespace, cacheNamespace];
