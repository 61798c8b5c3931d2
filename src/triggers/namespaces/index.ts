import { accumulatorNamespace } from './accumulator.js';
import { activityNamespace } from './activity.js';
import { apiNamespace } from './api.js';
import { emailNamespace } from './email.js';
import { cacheNamespace } from './cache.js';
import { endpointNamespace } from './endpoint.js';
import { execNamespace } from './exec.js';
import { fileNamespace } from './file.js';
import { geofenceNamespace } from './geofence.js';
import { locationNamespace } from './location.js';
import { reportNamespace } from './report.js';
import { alertNamespace } from './alert.js';
import { historyNamespace } from './history.js';
import type { Namespace } from './namespace.js';
import { prometheusNamespace } from './prometheus.js';
import { queueNamespace } from './queue.js';
import { triggerNamespace } from './trigger.js';

/**
 * The platform's namespaces scripts can call in the service; add a module here to add one. Those that reach a
 * protocol's devices come with its module (src/protocols/), and src/protocols/index.ts puts the two lists together.
 */
export const CORE_NAMESPACES: readonly Namespace[] = [
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
  fileNamespace,
  locationNamespace,
  geofenceNamespace,
  reportNamespace,
  alertNamespace,
  prometheusNamespace,
];
