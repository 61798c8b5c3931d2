import type { DeviceServer, DeviceServerContext } from '../devices/device-server.js';
import { ServiceDirectory } from '../devices/service-directory.js';
import { DtlsTransport } from '../dtls/dtls-transport.js';
import { checkTrustedCertificates } from '../dtls/trust.js';
import { AppError } from '../errors.js';
import { BootstrapServer } from './bootstrap/bootstrap-server.js';
import { checkServiceBootstrapOption } from './bootstrap/configs.js';
import { DeviceManagement } from './device-management.js';
import { CoapDownloads } from './file-downloads.js';
import { FotaService } from './fota/fota-service.js';
import { downloadUrl } from '../domain/file-links.js';
import { Lwm2mOrphanSweep } from './orphan-sweep.js';
import { PlainCoap } from './plain-coap.js';
import { Lwm2mServer } from './server.js';

/**
 * The CoAP device server of this process: LwM2M devices (registration, device management in
 * `channels.lwm2m`) and plain CoAP devices (`coap-request` events, `channels.coap`) on one UDP port.
 */
export function lwm2mServer(context: DeviceServerContext): DeviceServer {
  const { config, logger, presence, objects, domain, sendGuard, sendCaps, stores, bootstrapConfigs, serverCertificate } = context;
  const servicesOf = (type: 'lwm2m' | 'coap') => {
    const directory = new ServiceDirectory(domain.services, type, () => undefined, logger);
    return async () => (await directory.all()).map((entry) => entry.service);
  };
  // The plain-CoAP handler needs the server's endpoint, and the server hands it requests: built just after.
  const late: { plain?: PlainCoap; bootstrap?: BootstrapServer } = {};
  // CoAPS: the same interfaces over DTLS; PSKs are the endpoints' (PUT /endpoints/{ref}/security).
  const dtls =
    config.coapsPort === -1
      ? undefined
      : new DtlsTransport({
          host: config.coapHost,
          port: config.coapsPort,
          logger,
          credentials: {
            pskKey: async (identity) => (await domain.security.pskFor(identity.toString('utf8')))?.key,
            get certificate() {
              return serverCertificate?.current;
            },
          },
        });
  // Repository files by download link on both ports: the token authorises, no registration needed.
  const downloads = new CoapDownloads({ links: domain.fileLinks });
  const server = new Lwm2mServer({
    port: config.coapPort,
    host: config.coapHost,
    awakeMs: config.lwm2mAwakeMs,
    coap: { rateLimit: config.coapPeerRate === 0 ? false : { rate: config.coapPeerRate, burst: 2 * config.coapPeerRate } },
    logger,
    presence,
    logs: domain.logs,
    objects,
    lwm2mServices: servicesOf('lwm2m'),
    sendGuard,
    otherRequests: (request, peer, via) => late.plain!.handle(request, peer, via),
    bootstrap: (request, peer, endpoint, service) => late.bootstrap!.handle(request, peer, endpoint, service),
    downloads: (request) => downloads.handle(request),
    registrations: stores.lwm2m.registrations,
    cluster: context.cluster?.lwm2m,
    secure: dtls && { transport: dtls, port: config.coapsPort, sessionOf: (peer) => dtls.sessionOf(peer) },
    securityOf: (endpointId) => domain.security.of({ id: endpointId }),
  });
  const plain = new PlainCoap({
    coapFor: (peer) => server.coapFor(peer),
    refusal: (endpoint, service, peer, via) => server.refusal(endpoint, service, peer, via),
    domain,
    presence,
    logger,
    coapServices: servicesOf('coap'),
    registeredPeer: (endpointId) => server.registrationOf(endpointId)?.peer,
    sendGuard,
    sendCaps,
  });
  const management = new DeviceManagement({
    server,
    presence,
    objects,
    logger,
    lastKnown: stores.lwm2m.lastKnown,
    observations: stores.lwm2m.observations,
    queue: stores.lwm2m.queue,
    endpointById: (accountId, id) => domain.endpoints.byId(accountId, id),
  });
  const fota = new FotaService({
    store: stores.lwm2m.fota,
    domain,
    management,
    // Read at each call: in a cluster app.ts routes this channel to the node that holds each device.
    devices: () => context.channels.lwm2m ?? management,
    links: { create: (accountId, name, options) => domain.fileLinks.create(accountId, name, options), url: downloadUrl },
    ports: () => context.ports,
    publicHost: config.publicHost,
    emit: (endpoint, type, data) => presence.emit(endpoint, type, data),
    logger,
    node: context.cluster?.lwm2m.node,
  });
  context.cluster?.lwm2m.onNodeLost((lost) => void fota.nodeLost(lost).catch((error: unknown) => logger.warn({ err: error, node: lost }, 'could not take up the FOTA jobs of a lost node')));
  late.bootstrap = new BootstrapServer({
    coapFor: (peer) => server.coapFor(peer),
    configs: bootstrapConfigs,
    presence,
    objects,
    sendGuard,
    logger,
    stepTimeoutMs: config.lwm2mBootstrapStepTimeoutMs,
    serverCertificate: () => serverCertificate?.current.chain[0],
  });
  domain.services.checkOptions('lwm2m', (options) => {
    checkServiceBootstrapOption(options);
    checkTrustOption(options);
  });
  domain.services.checkOptions('coap', (options) => checkTrustOption(options));
  // A PSK changed or removed: sessions made with the old one are not resumed, connections end.
  domain.security.onChange((_endpointId, previous) => {
    if (previous?.pskIdentity !== undefined) dtls?.forgetIdentity(Buffer.from(previous.pskIdentity, 'utf8'));
  });
  // A cluster ends what no node holds any more: held requests past their time, observations of gone registrations.
  const cluster = context.cluster?.lwm2m;
  const sweep = cluster && new Lwm2mOrphanSweep({ endOrphans: (before, limit) => management.endOrphans(before, limit), leads: () => cluster.leads(), intervalMs: config.lwm2mSweepMs, logger });
  context.channels.lwm2m = management;
  context.channels.fota = fota;
  late.plain = plain;
  context.channels.coap = plain;
  return {
    name: server.name,
    // Registrations come back first (server.start), then the observations and held requests made for them.
    start: async () => {
      const ports = await server.start();
      await management.resume();
      sweep?.start();
      return ports;
    },
    // FOTA jobs of the last run go on once the ports their download URLs name are known.
    ready: () => fota.start(),
    closeAccount: (accountId) => server.closeAccount(accountId),
    stop: async () => {
      await sweep?.stop();
      await fota.stop();
      management.stop();
      await server.stop();
    },
  };
}

/** The service option `trustedCertificates` (PEM CA certificates for devices in X.509 mode), checked when written. */
function checkTrustOption(options: Record<string, unknown>): void {
  try {
    checkTrustedCertificates(options.trustedCertificates);
  } catch (error) {
    throw new AppError('IOTB_REQUEST_VALIDATION', `options.${(error as Error).message}`, { field: 'options.trustedCertificates' });
  }
}
