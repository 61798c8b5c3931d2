import type { ApiData } from '../api/client';
import type { paths } from '../api/schema';

/** `GET /auth/oidc/mapping`: where the mapping comes from, the mapping (null: none yet), when it was set. */
export type MappingView = ApiData<'/auth/oidc/mapping'>;
/** The body of `PUT /auth/oidc/mapping`. */
export type MappingBody = paths['/auth/oidc/mapping']['put']['requestBody']['content']['application/json'];

/** What the editor starts with when there is no mapping yet: an empty domain mapping to fill in. */
export const EMPTY_MAPPING: MappingBody = { mode: 'domain', domains: {} };
