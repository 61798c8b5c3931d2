import { useCallback } from 'react';
import { call, type ApiData } from '../api/client';
import { useResource, type Resource } from '../api/use-resource';
import type { Session } from '../session/session';

export type WhoAmI = ApiData<'/auth/whoami'>;
export type User = ApiData<'/users/{id}'>;

export interface Identity {
  readonly whoAmI: WhoAmI;
  /** The signed-in person, for a user token. */
  readonly user: User | undefined;
}

/** Who the token is (GET /auth/whoami in the acting account) and, for a user token, the user's name and email. */
export function useIdentity({ api, homeApi }: Pick<Session, 'api' | 'homeApi'>): Resource<Identity> {
  const load = useCallback(async (): Promise<Identity> => {
    const whoAmI = await call(api.GET('/auth/whoami'));
    const user =
      whoAmI.userId === null ? undefined : await call(homeApi.GET('/users/{id}', { params: { path: { id: whoAmI.userId } } })).catch(() => undefined);
    return { whoAmI, user };
  }, [api, homeApi]);
  return useResource(load);
}
