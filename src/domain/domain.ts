import { Accounts, type AccountStore } from './accounts.js';
import { DeviceCredentials } from './device-credentials.js';
import { DeviceSecurity, type DeviceSecurityStore } from './device-security.js';
import { Files, type FileStore } from './files.js';
import { FileLinks, type FileLinkStore } from './file-links.js';
import { EndpointProvisioning } from './endpoint-provisioning.js';
import { Endpoints, type EndpointStore } from './endpoints.js';
import { Services, type ServiceStore } from './services.js';
import { Tokens, type TokenStore } from './tokens.js';
import { Users, type UserStore } from './users.js';
import type { EventBus } from '../events/event-bus.js';
import type { EventStore } from '../events/event-store.js';
import { Events } from '../events/events.js';
import { History } from '../events/history.js';
import { Replies } from '../events/replies.js';
import { Executions, type ExecutionStore } from '../triggers/executions.js';
import { Triggers, type TriggerStore } from '../triggers/triggers.js';

/** The domain services: the only code that changes state. HTTP routes, scripts and protocol adapters all call these. */
export interface Domain {
  readonly accounts: Accounts;
  readonly tokens: Tokens;
  readonly users: Users;
  readonly services: Services;
  readonly endpoints: Endpoints;
  /** Device passwords (MQTT log-in), generated or chosen. */
  readonly credentials: DeviceCredentials;
  /** Endpoints created together with their credentials, one or many per call. */
  readonly provisioning: EndpointProvisioning;
  /** DTLS security of endpoints (PSK identity and key, or X.509). */
  readonly security: DeviceSecurity;
  /** The account's file repository (firmware images and other assets). */
  readonly files: Files;
  /** Download links of repository files: devices fetch a file without a bearer token. */
  readonly fileLinks: FileLinks;
  readonly events: Events;
  readonly history: History;
  /** Waiting `POST /events` requests and the triggers' replies to them. */
  readonly replies: Replies;
  readonly triggers: Triggers;
  readonly executions: Executions;
}

export interface DomainStores {
  readonly accounts: AccountStore;
  readonly tokens: TokenStore;
  readonly users: UserStore;
  readonly services: ServiceStore;
  readonly endpoints: EndpointStore;
  readonly deviceSecurity: DeviceSecurityStore;
  readonly files: FileStore;
  readonly fileLinks: FileLinkStore;
  readonly events: EventStore;
  readonly triggers: TriggerStore;
  readonly executions: ExecutionStore;
}

export interface DomainOptions {
  readonly userTokenTtlSeconds: number;
  readonly tokenCacheTtlSeconds: number;
  /** Shortest password a person may choose for a device. */
  readonly devicePasswordMinLength: number;
  /** How long a chosen device password's check may expect to wait before the device is told to try later (ms). */
  readonly devicePasswordMaxWaitMs: number;
}

export function createDomain(stores: DomainStores, bus: EventBus, options: DomainOptions): Domain {
  const accounts = new Accounts(stores.accounts);
  const tokens = new Tokens(stores.tokens, { cacheTtlMs: options.tokenCacheTtlSeconds * 1000 });
  const users = new Users(stores.users, tokens, { tokenTtlSeconds: options.userTokenTtlSeconds });
  const services = new Services(stores.services);
  const endpoints = new Endpoints(stores.endpoints, services);
  const credentials = new DeviceCredentials(stores.endpoints, endpoints, { minPasswordLength: options.devicePasswordMinLength, maxWaitMs: options.devicePasswordMaxWaitMs });
  const provisioning = new EndpointProvisioning(endpoints, credentials);
  const security = new DeviceSecurity(stores.deviceSecurity, endpoints);
  const files = new Files(stores.files);
  const fileLinks = new FileLinks(stores.fileLinks, files);
  const replies = new Replies();
  const events = new Events(bus, endpoints, replies);
  const history = new History(stores.events, endpoints);
  const triggers = new Triggers(stores.triggers);
  const executions = new Executions(stores.executions);
  return { accounts, tokens, users, services, endpoints, credentials, provisioning, security, files, fileLinks, events, history, replies, triggers, executions };
}
