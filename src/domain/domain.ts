import { Accounts, type AccountStore } from './accounts.js';
import { Endpoints, type EndpointStore } from './endpoints.js';
import { Services, type ServiceStore } from './services.js';
import { Tokens, type TokenStore } from './tokens.js';
import { Users, type UserStore } from './users.js';

/** The domain services: the only code that changes state. HTTP routes, scripts and protocol adapters all call these. */
export interface Domain {
  readonly accounts: Accounts;
  readonly tokens: Tokens;
  readonly users: Users;
  readonly services: Services;
  readonly endpoints: Endpoints;
}

export interface DomainStores {
  readonly accounts: AccountStore;
  readonly tokens: TokenStore;
  readonly users: UserStore;
  readonly services: ServiceStore;
  readonly endpoints: EndpointStore;
}

export interface DomainOptions {
  readonly userTokenTtlSeconds: number;
  readonly tokenCacheTtlSeconds: number;
}

export function createDomain(stores: DomainStores, options: DomainOptions): Domain {
  const accounts = new Accounts(stores.accounts);
  const tokens = new Tokens(stores.tokens, { cacheTtlMs: options.tokenCacheTtlSeconds * 1000 });
  const users = new Users(stores.users, tokens, { tokenTtlSeconds: options.userTokenTtlSeconds });
  const services = new Services(stores.services);
  const endpoints = new Endpoints(stores.endpoints, services);
  return { accounts, tokens, users, services, endpoints };
}
