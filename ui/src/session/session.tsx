import { createContext, useCallback, useContext, useMemo, useState, type ReactNode } from 'react';
import { apiClient, type ApiClient } from '../api/client';
import { loadCredentials, saveCredentials, type Credentials } from './credentials';

export interface Session {
  readonly credentials: Credentials;
  /** Acts in the chosen account (the token's own, or the sub-account of the switcher). */
  readonly api: ApiClient;
  /** Acts in the token's own account: its sub-accounts, its user. */
  readonly homeApi: ApiClient;
  /** Acts in this sub-account from now on; undefined: the token's own account. */
  readonly switchAccount: (accountId: string | undefined) => void;
  /** Revokes a user token (POST /auth/logout), forgets the credentials and shows the sign-in page. */
  readonly signOut: (reason?: string) => Promise<void>;
}

interface SessionState {
  readonly session: Session | undefined;
  /** Why the last session ended, for the sign-in page (an expired token, a sign-out). */
  readonly endedBecause: string | undefined;
  readonly signIn: (credentials: Credentials) => void;
}

const SessionContext = createContext<SessionState | undefined>(undefined);

/** Holds the credentials of this tab and the API clients made from them. */
export function SessionProvider({ children }: { readonly children: ReactNode }) {
  const [credentials, setCredentials] = useState<Credentials | undefined>(loadCredentials);
  const [endedBecause, setEndedBecause] = useState<string | undefined>(undefined);

  const change = useCallback((next: Credentials | undefined) => {
    saveCredentials(next);
    setCredentials(next);
  }, []);

  const signIn = useCallback(
    (next: Credentials) => {
      setEndedBecause(undefined);
      change(next);
    },
    [change],
  );

  const session = useMemo<Session | undefined>(() => {
    if (credentials === undefined) return undefined;
    const homeApi = apiClient(credentials.token);
    return {
      credentials,
      api: credentials.accountId === undefined ? homeApi : apiClient(credentials.token, credentials.accountId),
      homeApi,
      switchAccount: (accountId) => change({ token: credentials.token, accountId }),
      signOut: async (reason) => {
        // The pages go first, so that none of them asks again with a token about to be revoked (a 401 mid-way).
        setEndedBecause(reason);
        change(undefined);
        // Only a user token is a session the service can end; an API token stays valid until revoked.
        if (credentials.token.startsWith('UT:')) await homeApi.POST('/auth/logout').catch(() => undefined);
      },
    };
  }, [credentials, change]);

  const state = useMemo(() => ({ session, endedBecause, signIn }), [session, endedBecause, signIn]);
  return <SessionContext.Provider value={state}>{children}</SessionContext.Provider>;
}

function useSessionState(): SessionState {
  const state = useContext(SessionContext);
  if (state === undefined) throw new Error('useSession outside <SessionProvider>');
  return state;
}

/** The signed-in session; only for components shown after sign-in. */
export function useSession(): Session {
  const { session } = useSessionState();
  if (session === undefined) throw new Error('useSession before sign-in');
  return session;
}

/** For the sign-in page and the app shell: the session if any, how to start one, and why the last one ended. */
export function useSignIn(): SessionState {
  return useSessionState();
}
