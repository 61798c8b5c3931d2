import { accumulatorNamespace } from './accumulator.js';
import { activityNamespace } from './activity.js';
import { apiNamespace } from './api.js';
import { emailNamespace } from './email.js';
import { cacheNamespace } from './cache.js';
import { coapNamespace } from './coap.js';
import { endpointNamespace } from './endpoint.js';
import { execNamespace } from './exec.js';
import { fileNamespace } from './file.js';
import { geofenceNamespace } from './geofence.js';
import { locationNamespace } from './location.js';
import { reportNamespace } from './report.js';
import { alertNamespace } from './alert.js';
import { historyNamespace } from './history.js';
import { loraNamespace } from './lora.js';
import { lwm2mNamespace } from './lwm2m.js';
import { mqttNamespace } from './mqtt.js';
import type { Namespace } from './namespace.js';
import { prometheusNamespace } from './prometheus.js';
import { queueNamespace } from './queue.js';
import { tcpNamespace } from './tcp.js';
import { triggerNamespace } from './trigger.js';
import { udpNamespace } from './udp.js';

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
  udpNamespace,
  tcpNamespace,
  loraNamespace,
  coapNamespace,
  lwm2mNamespace,
  mqttNamespace,
  fileNamespace,
  locationNamespace,
  geofenceNamespace,
  reportNamespace,
  alertNamespace,
  prometheusNamespace,
];
