import type { Endpoint } from '../domain/endpoints.js';
import type { Scope } from '../domain/scope.js';
import type { Lwm2mChannel } from '../lwm2m/lwm2m-channel.js';
import type { DeviceChannels } from './device-server.js';

/**
 * Calls between the nodes of a cluster (docs/cluster.md, "Routing device calls"): a device call made on one node
 * runs on the node whose socket the device talks to. The implementation is in src/store/redis-node-calls.ts.
 */
export interface NodeCalls {
  /** This node's id. */
  readonly node: string;
  /**
   * Runs `method` of the channel `target` on `node` and resolves with its result, or rejects with its error.
   * Rejects with `NodeUnreachable` when that node does not take the call at once (it died): nothing ran there.
   */
  call(node: string, target: string, method: string, args: readonly unknown[], timeoutMs: number): Promise<unknown>;
  /** Runs the calls other nodes make to `target` here. */
  serve(target: string, handler: (method: string, args: readonly unknown[]) => Promise<unknown>): void;
}

/** The node a call was sent to did not take it: it is gone, so the call runs where it was made. */
export class NodeUnreachable extends Error {
  constructor(node: string) {
    super(`node ${node} did not take the call`);
    this.name = 'NodeUnreachable';
  }
}

export interface DeviceRoutingDeps {
  readonly calls: NodeCalls;
  /** The node that last heard the device (where its socket is); undefined when none recorded one. */
  readonly heardBy: (endpoint: Endpoint) => Promise<string | undefined>;
  /** The caller's endpoint by reference, scoped (another account's is 404 before anything is routed). */
  readonly endpointOf: (scope: Scope, ref: string) => Promise<Endpoint>;
}

/** How long a quick call (a send, a subscription, a look-up) may take on the other node. */
const QUICK_MS = 15_000;
/** Added to a call's own time limit for the trip between nodes. */
const TRIP_MS = 5_000;

/**
 * Replaces each device channel of this node with one that runs the call on the node that heard the device, and
 * serves the other nodes' calls with this node's own channels. Tenancy is checked where the call is made (the
 * endpoint is looked up in the caller's scope) and again where it runs (the same scope travels with the call).
 */
export function routeDeviceChannels(channels: DeviceChannels, deps: DeviceRoutingDeps): void {
  const router = new DeviceRouter(deps);
  const { udp, tcp, coap, mqtt, lwm2m } = channels;
  if (udp) {
    router.serve('udp', udp, ['send', 'queue']);
    channels.udp = {
      send: (scope, ref, payload) => router.byRef(scope, ref, 'udp', 'send', [scope, ref, payload], QUICK_MS, () => udp.send(scope, ref, payload)),
      queue: (scope, ref, payload, ttl) => router.byRef(scope, ref, 'udp', 'queue', [scope, ref, payload, ttl], QUICK_MS, () => udp.queue(scope, ref, payload, ttl)),
    };
  }
  if (tcp) {
    router.serve('tcp', tcp, ['send']);
    channels.tcp = { send: (scope, ref, payload) => router.byRef(scope, ref, 'tcp', 'send', [scope, ref, payload], QUICK_MS, () => tcp.send(scope, ref, payload)) };
  }
  if (coap) {
    router.serve('coap', coap, ['send', 'notify']);
    channels.coap = {
      send: (scope, ref, request) => router.byRef(scope, ref, 'coap', 'send', [scope, ref, request], request.timeoutMs + TRIP_MS, () => coap.send(scope, ref, request)),
      notify: (scope, ref, path, payload, format) => router.byRef(scope, ref, 'coap', 'notify', [scope, ref, path, payload, format], QUICK_MS, () => coap.notify(scope, ref, path, payload, format)),
    };
  }
  if (mqtt) {
    // Publications already reach every node (the brokers share messages); a subscription is the session's own.
    router.serve('mqtt', mqtt, ['subscribe']);
    channels.mqtt = {
      publish: (scope, ref, message) => mqtt.publish(scope, ref, message),
      subscribe: (scope, ref, topic, qos) => router.byRef(scope, ref, 'mqtt', 'subscribe', [scope, ref, topic, qos], QUICK_MS, () => mqtt.subscribe(scope, ref, topic, qos)),
    };
  }
  if (lwm2m) channels.lwm2m = routedLwm2m(lwm2m, router);
}

/** LwM2M device management where the device's registration is held. */
function routedLwm2m(local: Lwm2mChannel, router: DeviceRouter): Lwm2mChannel {
  router.serve('lwm2m', local, ['perform', 'hold', 'heldRequests', 'cancelHeld', 'queued', 'registrationOf', 'lastKnown', 'observations']);
  const at = <T>(endpoint: Endpoint, method: keyof Lwm2mChannel, args: readonly unknown[], timeoutMs: number, here: () => Promise<T> | T): Promise<T> =>
    router.byEndpoint(endpoint, 'lwm2m', method, args, timeoutMs, async () => here());
  return {
    perform: (endpoint, request, hooks) => {
      // The device queue may hold it (up to queueTimeout), then the device has `timeout` to answer.
      const limit = (request.queueTimeoutMs ?? request.timeoutMs) + request.timeoutMs + TRIP_MS;
      return at(endpoint, 'perform', [endpoint, request], limit, () => local.perform(endpoint, request, hooks));
    },
    hold: (endpoint, request, options) => at(endpoint, 'hold', [endpoint, request, options], QUICK_MS, () => local.hold(endpoint, request, options)),
    heldRequests: (endpoint) => at(endpoint, 'heldRequests', [endpoint], QUICK_MS, () => local.heldRequests(endpoint)),
    cancelHeld: (endpoint, id) => at(endpoint, 'cancelHeld', [endpoint, id], QUICK_MS, () => local.cancelHeld(endpoint, id)),
    queued: (endpoint) => at(endpoint, 'queued', [endpoint], QUICK_MS, () => local.queued(endpoint)),
    registrationOf: (endpoint) => at(endpoint, 'registrationOf', [endpoint], QUICK_MS, () => local.registrationOf(endpoint)),
    objectName: (endpoint, objectId) => local.objectName(endpoint, objectId),
    lastKnown: (endpoint) => at(endpoint, 'lastKnown', [endpoint], QUICK_MS, () => local.lastKnown(endpoint)),
    observations: (endpoint) => at(endpoint, 'observations', [endpoint], QUICK_MS, () => local.observations(endpoint)),
  };
}

/** Decides where a device call runs and carries it there. */
class DeviceRouter {
  readonly #deps: DeviceRoutingDeps;

  constructor(deps: DeviceRoutingDeps) {
    this.#deps = deps;
  }

  /** Serves `methods` of `channel` (and nothing else) to the other nodes. */
  serve(target: string, channel: object, methods: readonly string[]): void {
    const allowed = new Set(methods);
    this.#deps.calls.serve(target, async (method, args) => {
      if (!allowed.has(method)) throw new Error(`${target}.${method} is not served to other nodes`);
      const run = (channel as Record<string, (...args: readonly unknown[]) => unknown>)[method]!;
      return run.apply(channel, [...args]);
    });
  }

  async byRef<T>(scope: Scope, ref: string, target: string, method: string, args: readonly unknown[], timeoutMs: number, here: () => Promise<T>): Promise<T> {
    const endpoint = await this.#deps.endpointOf(scope, ref);
    return this.byEndpoint(endpoint, target, method, args, timeoutMs, here);
  }

  async byEndpoint<T>(endpoint: Endpoint, target: string, method: string, args: readonly unknown[], timeoutMs: number, here: () => Promise<T>): Promise<T> {
    const node = await this.#deps.heardBy(endpoint);
    if (node === undefined || node === this.#deps.calls.node) return here();
    try {
      return (await this.#deps.calls.call(node, target, method, args, timeoutMs)) as T;
    } catch (error) {
      // The node that heard the device is gone: its next message reaches a node that takes it over; until then
      // this node answers as it would for a device it never heard (not registered, not connected, or sent from here).
      if (error instanceof NodeUnreachable) return here();
      throw error;
    }
  }
}
