import type { ApiData } from '../api/client';

/** `GET /licence`: the state for everyone; licensee, dates and limits for a Super-Admin. */
export type LicenceStatus = ApiData<'/licence'>;
