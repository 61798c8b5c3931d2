/** The mapping stored by `PUT /auth/oidc/mapping`: its JSON text, when and by whom. */
export interface StoredMapping {
  readonly mapping: string;
  /** Epoch ms. */
  readonly updatedAt: number;
  /** The token id that set it. */
  readonly updatedBy: string | null;
}

/** One provider identity (issuer and subject) signed in as one user of one account. */
export interface IdentityLink {
  readonly issuer: string;
  readonly subject: string;
  readonly accountId: string;
  readonly userId: string;
}

/** External sign-in's state in the database (migration 0039): the API's mapping and identity links. */
export interface OidcStore {
  readMapping(): Promise<StoredMapping | undefined>;
  writeMapping(mapping: StoredMapping): Promise<void>;
  /** The user this identity signed in as in this account; links go when the user or account is deleted. */
  findUser(issuer: string, subject: string, accountId: string): Promise<string | undefined>;
  /** Records (or moves, or refreshes) the link, with the time of this sign-in. */
  link(link: IdentityLink, now: number): Promise<void>;
}
