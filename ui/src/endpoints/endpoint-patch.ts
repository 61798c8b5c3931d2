import { call, type ApiClient } from '../api/client';
import type { paths } from '../api/schema';
import type { Endpoint } from './endpoint-table';

export type EndpointPatchBody = paths['/endpoints/{ref}']['patch']['requestBody']['content']['application/json'];

/** `PATCH /endpoints/{id}`: the endpoint as changed, or an ApiError with the API's message. */
export function patchEndpoint(api: ApiClient, id: string, body: EndpointPatchBody): Promise<Endpoint> {
  return call(api.PATCH('/endpoints/{ref}', { params: { path: { ref: id } }, body }));
}
