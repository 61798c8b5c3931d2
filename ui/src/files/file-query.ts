import { href } from '../router/hash-location';

/** Files per page of the list. */
export const FILES_PAGE_SIZE = 25;

/** The list's filter and page as the fragment carries them (`#/files?prefix=firmware/&tag=fw&offset=25`). */
export interface FileQuery {
  readonly prefix: string;
  readonly tag: string;
  readonly offset: number;
}

export function readFileQuery(query: URLSearchParams): FileQuery {
  const offset = Number(query.get('offset') ?? 0);
  return { prefix: query.get('prefix') ?? '', tag: query.get('tag') ?? '', offset: Number.isInteger(offset) && offset > 0 ? offset : 0 };
}

export function filesHref(query: Partial<FileQuery>): string {
  return href('/files', { prefix: query.prefix, tag: query.tag, offset: query.offset === 0 ? undefined : query.offset });
}
