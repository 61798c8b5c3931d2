import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Domain } from '../../domain/domain.js';
import { downloadUrl, FILE_LINK_TTL_DEFAULT_SECONDS, FILE_LINK_TTL_MAX_SECONDS } from '../../domain/file-links.js';
import type { ByteRange, FileRead } from '../../domain/files.js';
import { AppError, errorBody } from '../../errors.js';
import { ErrorBody, ERROR_RESPONSES } from '../schemas.js';

export interface DownloadRoutesOptions {
  readonly domain: Domain;
  /** `IOTBRIDGE_PUBLIC_HOST`: the host put into link URLs; unset: the Host of the request that makes the link. */
  readonly publicHost: string | undefined;
  /** The service's bound ports by name (`http`, `coap`, `coaps`), read when a link is made. */
  readonly ports: Readonly<Record<string, number>>;
}

const TAGS = ['files'];
/** A host name, an IPv4 address or a bracketed IPv6 address: what a Host header may put into a URL. */
const HOST = /^(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.?|\[[0-9A-Fa-f:.]+\])$/;

const LinkCreate = Type.Union(
  [
    Type.Object(
      {
        ttlSeconds: Type.Optional(
          Type.Integer({ minimum: 1, maximum: FILE_LINK_TTL_MAX_SECONDS, description: `How long the link works, seconds (default ${FILE_LINK_TTL_DEFAULT_SECONDS}, at most 30 days)` }),
        ),
        appendFileName: Type.Optional(Type.Boolean({ description: 'Append the file name to the URLs after the token (default false)' })),
        includePortInUrl: Type.Optional(Type.Boolean({ description: "Write the port even when it is the scheme's default (default false)" })),
      },
      { additionalProperties: false },
    ),
    Type.Null(),
  ],
  { description: 'Optional: an empty body takes the defaults' },
);

const LinkView = Type.Object({
  token: Type.String({ description: 'The secret of the link: shown in this answer only' }),
  name: Type.String(),
  expiresAt: Type.String({ format: 'date-time' }),
  sha256: Type.String({ description: 'The content the link serves; a replaced file makes the link answer 410' }),
  size: Type.Integer(),
  urls: Type.Object({
    http: Type.String(),
    coap: Type.String(),
    coaps: Type.Optional(Type.String({ description: 'Absent when CoAPS is off' })),
  }),
});

const FileNameParams = Type.Object({ name: Type.String({ minLength: 1, description: 'The file name, each "/" percent-encoded (%2F)' }) });

/**
 * Download links (docs/files.md "Device downloads"): `POST /file/{name}/links` and `DELETE
 * /file/{name}/links/{token}` for the account, and the public `GET /download/{token}[/{name}]` devices fetch
 * without a bearer token: Content-Length, ETag (the content's SHA-256), Range (206/416) and If-Range to
 * resume, If-None-Match (304). Unknown, revoked or expired links answer 404 `IOTB_FILE_LINK_INVALID`; links
 * whose file was replaced or removed 410 `IOTB_FILE_LINK_STALE`.
 */
export const downloadRoutes: FastifyPluginAsyncTypebox<DownloadRoutesOptions> = async (app, { domain, publicHost, ports }) => {
  const { fileLinks } = domain;

  const serve = async (request: FastifyRequest, reply: FastifyReply, token: string, name: string | undefined) => {
    const link = await fileLinks.resolve(token);
    // The token alone selects the file; a trailing name, when given, must be its name.
    if (!link || (name !== undefined && name !== '' && name !== link.name)) throw new AppError('IOTB_FILE_LINK_INVALID');
    const etag = `"${link.sha256}"`;
    const header = (field: string): string | undefined => {
      const value = request.headers[field];
      return typeof value === 'string' ? value : undefined;
    };
    // RFC 9110 13.1.2: a client holding this content asks whether it changed.
    const ifNoneMatch = header('if-none-match');
    if (ifNoneMatch !== undefined && (ifNoneMatch.trim() === '*' || ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag))) {
      return reply.status(304).header('etag', etag).send();
    }
    // RFC 9110 13.1.5: resume only if the content is still the one the client has (strong comparison).
    const ifRange = header('if-range');
    const range = ifRange === undefined || ifRange.trim() === etag ? parseRange(header('range')) : undefined;
    let read: FileRead;
    try {
      read = await fileLinks.read(token, range);
    } catch (error) {
      if (error instanceof AppError && error.code === 'IOTB_FILE_RANGE_NOT_SATISFIABLE') {
        return reply.status(416).header('content-range', `bytes */${link.size}`).header('accept-ranges', 'bytes').send(errorBody(error));
      }
      throw error;
    }
    const { start, end, file } = read;
    reply
      .status(range === undefined ? 200 : 206)
      .header('content-type', file.contentType)
      .header('content-length', String(end - start + 1))
      .header('etag', etag)
      .header('last-modified', new Date(file.updatedAt).toUTCString())
      .header('accept-ranges', 'bytes')
      .header('content-disposition', attachment(file.name))
      // Tenants' files are served from the API's origin: never rendered or sniffed as a page there.
      .header('x-content-type-options', 'nosniff')
      .header('content-security-policy', "default-src 'none'; sandbox")
      .header('cache-control', 'private');
    if (range !== undefined) reply.header('content-range', `bytes ${start}-${end}/${link.size}`);
    if (request.method === 'HEAD') {
      read.stream.destroy();
      return reply.send();
    }
    return reply.send(read.stream);
  };

  const downloadSchema = (params: ReturnType<typeof Type.Object>, summary: string) => ({
    tags: TAGS,
    summary,
    security: [],
    params,
    response: { 200: Type.Unknown({ description: 'The file content' }), 206: Type.Unknown({ description: 'A byte range of it' }), 404: ErrorBody, 410: ErrorBody, 416: ErrorBody },
  });

  app.route({
    method: ['GET', 'HEAD'],
    url: '/download/:token',
    config: { public: true },
    schema: downloadSchema(Type.Object({ token: Type.String() }), 'Public: the file of a download link (no bearer token); Range to resume'),
    handler: async (request, reply) => serve(request, reply, (request.params as { token: string }).token, undefined),
  });

  app.route({
    method: ['GET', 'HEAD'],
    url: '/download/:token/*',
    config: { public: true },
    schema: downloadSchema(Type.Object({ token: Type.String(), '*': Type.String() }), 'Public: the file of a download link, its name after the token (appendFileName)'),
    handler: async (request, reply) => {
      const params = request.params as { token: string; '*': string };
      return serve(request, reply, params.token, params['*']);
    },
  });

  app.post(
    '/file/:name/links',
    {
      schema: {
        tags: TAGS,
        summary: 'Make a download link to a file: devices fetch it over HTTP, CoAP or CoAPS without a token until it expires',
        params: FileNameParams,
        body: LinkCreate,
        response: { 201: LinkView, ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const body = request.body ?? {};
      const { principal } = request.scope;
      const link = await fileLinks.create(request.scope.accountId, request.params.name, {
        ttlSeconds: body.ttlSeconds ?? FILE_LINK_TTL_DEFAULT_SECONDS,
        createdBy: principal.userId ?? principal.tokenId,
      });
      const host = publicHost ?? (HOST.test(request.hostname) ? request.hostname : request.socket.localAddress ?? 'localhost');
      const shape = { appendFileName: body.appendFileName, includePortInUrl: body.includePortInUrl };
      // HTTP behind a TLS-terminating proxy (IOTBRIDGE_TRUST_PROXY and X-Forwarded-Proto: https): the proxy's port.
      const http = request.protocol === 'https' ? { scheme: 'https' as const, port: request.port ?? 443 } : { scheme: 'http' as const, port: ports.http ?? request.port ?? 80 };
      const urls = {
        http: downloadUrl(link, { ...http, host, ...shape }),
        coap: downloadUrl(link, { scheme: 'coap', host, port: ports.coap ?? 5683, ...shape }),
        ...(ports.coaps !== undefined && { coaps: downloadUrl(link, { scheme: 'coaps', host, port: ports.coaps, ...shape }) }),
      };
      return reply.status(201).send({ token: link.token, name: link.name, expiresAt: link.expiresAt, sha256: link.sha256, size: link.size, urls });
    },
  );

  app.delete(
    '/file/:name/links/:token',
    {
      schema: {
        tags: TAGS,
        summary: 'Revoke a download link of a file (at once on this node, within seconds on the others)',
        params: Type.Object({ name: Type.String({ minLength: 1 }), token: Type.String() }),
        response: { 204: Type.Null(), ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const { accountId } = request.scope;
      const { name, token } = request.params;
      const link = await fileLinks.resolve(token);
      if (!link || link.accountId !== accountId || link.name !== name || !(await fileLinks.revoke(accountId, token))) throw new AppError('IOTB_FILE_LINK_INVALID');
      return reply.status(204).send(null);
    },
  );
};

/**
 * `Range: bytes=…` as a byte range; undefined serves the whole file: no header, another unit, several ranges or
 * a malformed one (RFC 9110 14.2 lets a server ignore a Range it does not take). `bytes=-0` is kept: it is
 * unsatisfiable (416).
 */
export function parseRange(header: string | undefined): ByteRange | undefined {
  if (header === undefined) return undefined;
  const match = /^bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!match) return undefined;
  const [, first = '', last = ''] = match;
  if (first === '') {
    const suffix = Number(last);
    return last === '' || !Number.isSafeInteger(suffix) ? undefined : { last: suffix };
  }
  const start = Number(first);
  const end = last === '' ? undefined : Number(last);
  if (!Number.isSafeInteger(start) || (end !== undefined && (!Number.isSafeInteger(end) || end < start))) return undefined;
  return end === undefined ? { start } : { start, end };
}

/** `Content-Disposition: attachment` with the file's last name segment (RFC 6266: an ASCII fallback and the UTF-8 form). */
function attachment(name: string): string {
  const base = name.slice(name.lastIndexOf('/') + 1);
  const fallback = base.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encodeURIComponent(base).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}
