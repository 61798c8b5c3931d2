import { accumulatorNamespace } from './accumulator.js';
import { activityNamespace } from './activity.js';
import { apiNamespace } from './api.js';
import { emailNamespace } from './email.js';
import { cacheNamespace } from './cache.js';
import { endpointNamespace } from './endpoint.js';
import { execNamespace } from './exec.js';
import { historyNamespace } from './history.js';
import type { Namespace } from './namespace.js';
import { queueNamespace } from './queue.js';
import { triggerNamespace } from './trigger.js';

/** Every namespace scripts can call in the service; add a module here to add one. */
export const SERVICE_NAMESPACES: readonly Namespace[] = [
  endpointNamespace,
  historyNamespace,
  cacheNamespace,
  accumulatorNamespace,
  queueNamespace,
  triggerNamespace,
  execNamespace,
  apiNamespace,
  emailNamespace,
  activityNamespace,
];
