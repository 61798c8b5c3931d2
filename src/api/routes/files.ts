import type { IncomingMessage } from 'node:http';
import multipart, { type Multipart, type MultipartValue } from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Domain } from '../../domain/domain.js';
import { fileNameProblem, fileTooLarge, FILE_NAME_MAX, FILE_TAG_MAX, FILE_TAGS_MAX, resolveRange, type ByteRange, type FileInput, type StoredFile } from '../../domain/files.js';
import { ConcurrencyGate } from '../../domain/gate.js';
import type { Scope } from '../../domain/scope.js';
import { AppError, errorBody } from '../../errors.js';
import { ERROR_RESPONSES, ErrorBody, List, PageQuery } from '../schemas.js';

/**
 * The file repository over HTTP (docs/files.md "HTTP API"): `POST /file/upload` (multipart), `GET /file`,
 * `GET | PUT | PATCH | DELETE /file/{name}`, `GET | HEAD | PUT /file/{name}/content`. A name with folders is
 * one path segment: its `/` are percent-encoded (`/file/firmware%2Fv1.bin`). Uploads and downloads stream:
 * no content is ever held whole in memory.
 */

const TAGS = ['files'];

/** Uploads stored at once by this process; more wait (each holds a PostgreSQL connection for its duration). */
const UPLOADS_AT_ONCE = 4;
/** An upload holds its slot for seconds: the busy answer's Retry-After. */
const UPLOADS_RETRY_AFTER_SECONDS = 5;
/** Uploads that may wait for a slot; past them, `IOTB_FILE_UPLOADS_BUSY`. */
const UPLOADS_WAITING = 100;
/** Files in one multipart upload. */
export const UPLOAD_MAX_FILES = 100;
/** Bytes of one metadata field of a multipart upload (32 tags of 64 characters fit). */
const UPLOAD_FIELD_MAX_BYTES = 16 * 1024;
/**
 * How long the rest of a refused upload is read and discarded before the answer goes out. A client sending
 * past it gets the answer with `Connection: close`.
 */
const DISCARD_MAX_MS = 10_000;
/** The metadata fields of a multipart upload. */
const UPLOAD_FIELDS = ['name', 'version', 'contentType', 'tags'] as const;
type UploadField = (typeof UPLOAD_FIELDS)[number];

const Timestamp = Type.String({ format: 'date-time' });
const FileName = Type.String({
  minLength: 1,
  maxLength: FILE_NAME_MAX * 2,
  description: 'File name; `/` separates folders and is percent-encoded in a path (`firmware%2Fv1.bin`)',
});
const NameParams = Type.Object({ name: FileName });

const FileInfo = Type.Object({
  accountId: Type.String(),
  name: Type.String(),
  size: Type.Integer({ description: 'Bytes' }),
  sha256: Type.String({ description: 'SHA-256 of the content, lower-case hex; the ETag of the content is `"<sha256>"`' }),
  contentType: Type.String(),
  version: Type.Union([Type.String(), Type.Null()]),
  tags: Type.Array(Type.String()),
  createdBy: Type.Union([Type.String(), Type.Null()], { description: 'The user (or else the token) that created the file' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

const TagsQuery = Type.Array(Type.String({ maxLength: FILE_TAGS_MAX * (FILE_TAG_MAX * 2 + 1) }), {
  maxItems: FILE_TAGS_MAX,
  description: 'Repeatable (`tags=a&tags=b`), or comma-separated (`tags=a,b`)',
});

const FilePatch = Type.Object(
  {
    contentType: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'A media type' })),
    // Not a union with Null: the API's type coercion would turn "" into null and clear the version.
    version: Type.Optional(Type.Unsafe<string | null>({ type: 'string', nullable: true, minLength: 1, maxLength: 256, description: 'null clears it' })),
    tags: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: FILE_TAG_MAX * 2 }), { maxItems: FILE_TAGS_MAX * 4, description: 'Replaces the list' })),
  },
  { additionalProperties: false },
);

/** Describes the streamed bodies in the OpenAPI document; routes read them as streams, so the value checked is null. */
const UploadBody = Type.Object(
  {
    name: Type.Optional(Type.String({ description: "The next file's name (default: the part's filename)" })),
    version: Type.Optional(Type.String({ description: "The next file's version" })),
    contentType: Type.Optional(Type.String({ description: "The next file's media type (default: the part's Content-Type)" })),
    tags: Type.Optional(Type.String({ description: "The next file's tags: repeat the field, or separate them with commas" })),
    file: Type.String({ format: 'binary', description: 'One or more file parts (any field name); each takes the metadata fields sent after the file before it' }),
  },
  { nullable: true },
);
const RawContent = Type.String({ format: 'binary', nullable: true, description: 'The content, any media type; its Content-Type becomes the file\'s' });
const Binary = (description: string) => ({ description, content: { '*/*': { schema: { type: 'string', format: 'binary' } } } });

export interface FileRoutesOptions {
  readonly domain: Domain;
  /** The longest upload, in bytes (`IOTBRIDGE_FILE_MAX_BYTES`). */
  readonly fileMaxBytes: number;
}

/** The acting account's file repository. */
export const fileRoutes: FastifyPluginAsyncTypebox<FileRoutesOptions> = async (app, { domain, fileMaxBytes: maxBytes }) => {
  const { files } = domain;
  const uploads = new ConcurrencyGate(UPLOADS_AT_ONCE, UPLOADS_WAITING, 'IOTB_FILE_UPLOADS_BUSY', UPLOADS_RETRY_AFTER_SECONDS);

  await app.register(multipart, {
    limits: {
      // The store refuses the byte past fileMaxBytes (IOTB_FILE_TOO_LARGE) before busboy would cut the part.
      fileSize: Math.min(maxBytes + 1, Number.MAX_SAFE_INTEGER),
      files: UPLOAD_MAX_FILES,
      fields: UPLOAD_MAX_FILES * UPLOAD_FIELDS.length * 2,
      fieldSize: UPLOAD_FIELD_MAX_BYTES,
      parts: UPLOAD_MAX_FILES * (UPLOAD_FIELDS.length * 2 + 1),
      headerPairs: 100,
    },
  });

  app.post(
    '/file/upload',
    {
      schema: {
        tags: TAGS,
        summary: 'Upload one or more files (multipart/form-data, streamed); the metadata fields sent before a file part apply to it',
        body: { content: { 'multipart/form-data': { schema: UploadBody } } },
        response: { 201: Type.Object({ files: Type.Array(FileInfo) }), ...ERROR_RESPONSES, 413: ErrorBody, 415: ErrorBody, 503: ErrorBody },
      },
    },
    async (request, reply) => {
      if (!request.isMultipart()) {
        throw new AppError('IOTB_REQUEST_UNSUPPORTED_MEDIA_TYPE', 'POST /file/upload takes multipart/form-data; PUT /file/{name} takes the content as the raw body');
      }
      const { accountId } = request.scope;
      const createdBy = creatorOf(request.scope);
      const stored: StoredFile[] = [];
      const parts = request.parts();
      let pending = new PendingMeta();
      let part: Multipart | undefined;
      try {
        for (;;) {
          part = undefined;
          let next: IteratorResult<Multipart>;
          try {
            next = await parts.next();
          } catch (error) {
            throw multipartError(error, maxBytes);
          }
          if (next.done) break;
          part = next.value;
          if (part.type === 'field') {
            pending.add(part);
            continue;
          }
          const given = pending.input();
          pending = new PendingMeta();
          const { file, filename, mimetype } = part;
          const meta: FileInput = { ...given, name: given.name ?? filename, contentType: given.contentType ?? mimetype, createdBy };
          try {
            stored.push(await uploads.run(() => files.put(accountId, meta, file, { maxBytes })));
          } catch (error) {
            throw error === file.errored ? multipartError(error, maxBytes) : error;
          }
        }
        if (!pending.empty) throw invalid('fields', 'Metadata fields apply to the file part sent after them: these came after the last file', { fields: pending.names });
        if (stored.length === 0) throw invalid('file', 'The upload has no file part');
      } catch (error) {
        if (part?.type === 'file') part.file.destroy();
        await removeStored(stored);
        await discardRest(request, reply);
        throw error;
      }
      return reply.status(201).send({ files: stored });
    },
  );

  /** Files created by an upload that then failed: the upload is all or nothing (a file changed since is left). */
  async function removeStored(stored: readonly StoredFile[]): Promise<void> {
    for (const file of stored) {
      try {
        const now = await files.info(file.accountId, file.name);
        if (now.sha256 === file.sha256 && now.updatedAt === file.updatedAt) await files.remove(file.accountId, file.name);
      } catch (error) {
        if (!(error instanceof AppError && error.code === 'IOTB_FILE_NOT_FOUND')) app.log.warn({ err: error, file: file.name }, 'could not remove a file of a failed upload');
      }
    }
  }

  app.get(
    '/file',
    {
      schema: {
        tags: TAGS,
        summary: 'Files of the acting account, by name; filter by name prefix (a folder: `firmware/`) and tag',
        querystring: Type.Object({
          ...PageQuery,
          prefix: Type.Optional(Type.String({ maxLength: FILE_NAME_MAX * 2, description: 'Names starting with this, case-sensitively' })),
          tag: Type.Optional(Type.String({ maxLength: FILE_TAG_MAX * 2, description: 'Files having this tag' })),
        }),
        response: { 200: List(FileInfo), ...ERROR_RESPONSES },
      },
    },
    async (request) => files.list(request.scope.accountId, request.query),
  );

  app.get(
    '/file/:name',
    { schema: { tags: TAGS, summary: "A file's metadata: size, sha256, contentType, version, tags, times, creator", params: NameParams, response: { 200: FileInfo, ...ERROR_RESPONSES } } },
    async (request) => files.info(request.scope.accountId, checkName(request.params.name)),
  );

  app.patch(
    '/file/:name',
    {
      schema: {
        tags: TAGS,
        summary: "Change a file's metadata (contentType, version: null clears it, tags: replaces them); the content stays",
        params: NameParams,
        body: FilePatch,
        response: { 200: FileInfo, ...ERROR_RESPONSES },
      },
    },
    async (request) => files.updateMeta(request.scope.accountId, checkName(request.params.name), request.body),
  );

  app.delete(
    '/file/:name',
    { schema: { tags: TAGS, summary: 'Delete a file', params: NameParams, response: { 204: Type.Null(), ...ERROR_RESPONSES } } },
    async (request, reply) => {
      await files.remove(request.scope.accountId, checkName(request.params.name));
      return reply.status(204).send(null);
    },
  );

  const contentSchema = (method: 'GET' | 'HEAD') => ({
    tags: TAGS,
    summary:
      method === 'GET'
        ? "A file's content, streamed; Range (one range) → 206, If-None-Match → 304"
        : "A file's content headers (Content-Length, ETag, Last-Modified) without the content",
    params: NameParams,
    response: {
      200: Binary('The whole content'),
      206: Binary('The requested range (Content-Range)'),
      304: Type.Null({ description: 'If-None-Match matched the ETag' }),
      ...ERROR_RESPONSES,
      416: ErrorBody,
    },
  });
  // HEAD is a route of its own: Fastify's implicit one would read the whole content only to drop it.
  app.get('/file/:name/content', { exposeHeadRoute: false, schema: contentSchema('GET') }, async (request, reply) => sendContent(request, reply, request.params.name, false));
  app.head('/file/:name/content', { schema: contentSchema('HEAD') }, async (request, reply) => sendContent(request, reply, request.params.name, true));

  async function sendContent(request: FastifyRequest, reply: FastifyReply, pathName: string, head: boolean): Promise<FastifyReply> {
    const { accountId } = request.scope;
    const name = checkName(pathName);
    const info = await files.info(accountId, name);
    // RFC 9110 13.2.2: If-None-Match before Range.
    if (noneMatch(headerOf(request, 'if-none-match'), etagOf(info))) return reply.status(304).headers(validators(info)).send();
    const range = requestedRange(headerOf(request, 'range'), headerOf(request, 'if-range'), info);
    try {
      if (head) {
        const { start, end } = resolveRange(info.size, range);
        return reply.status(range ? 206 : 200).headers(contentHeaders(info, start, end, range !== undefined)).send();
      }
      const read = await files.read(accountId, name, range);
      return reply.status(range ? 206 : 200).headers(contentHeaders(read.file, read.start, read.end, range !== undefined)).send(read.stream);
    } catch (error) {
      if (!(error instanceof AppError && error.code === 'IOTB_FILE_RANGE_NOT_SATISFIABLE')) throw error;
      // RFC 9110 15.5.17: a 416 names the current length.
      const size = (error.details as { size?: number } | undefined)?.size ?? info.size;
      return reply.status(416).header('content-range', `bytes */${size}`).send(errorBody(error));
    }
  }

  // Raw-body uploads: every media type is the content, streamed from the socket, never parsed nor buffered.
  await app.register(async (child) => {
    const raw = child.withTypeProvider<TypeBoxTypeProvider>();
    raw.removeAllContentTypeParsers();
    raw.addContentTypeParser('*', (_request, _payload, done) => done(null));

    const putSchema = (path: string) => ({
      tags: TAGS,
      summary: `Store a file's content from the raw body (streamed), creating the file (201) or replacing its content atomically (200)${path === '' ? '; the same as PUT /file/{name}/content' : ''}`,
      description:
        'The Content-Type header becomes the contentType (default application/octet-stream); `version` and `tags` come from the query. ' +
        'Metadata not given are reset; a replaced file keeps its createdAt and createdBy.',
      params: NameParams,
      querystring: Type.Object({ version: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })), tags: Type.Optional(TagsQuery) }),
      body: { content: { '*/*': { schema: RawContent } } },
      response: { 200: FileInfo, 201: FileInfo, ...ERROR_RESPONSES, 413: ErrorBody, 503: ErrorBody },
    });
    for (const path of ['', '/content']) {
      raw.put(`/file/:name${path}`, { schema: putSchema(path) }, async (request, reply) => {
        const name = checkName(request.params.name);
        const input: FileInput = {
          name,
          contentType: request.headers['content-type'],
          version: request.query.version,
          tags: splitTags(request.query.tags),
          createdBy: creatorOf(request.scope),
        };
        let result;
        try {
          // A declared length over the limit is refused before any byte is stored.
          if (Number(request.headers['content-length']) > maxBytes) throw fileTooLarge(maxBytes);
          result = await uploads.run(() => files.replace(request.scope.accountId, input, request.raw, { maxBytes }));
        } catch (error) {
          await discardRest(request, reply);
          if (error === request.raw.errored) throw new AppError('IOTB_REQUEST_VALIDATION', 'The request body ended early: nothing was stored');
          throw error;
        }
        return reply.status(result.created ? 201 : 200).send(result.file);
      });
    }
  });
};

/** Who is recorded as a file's creator: the user, or else the token. */
function creatorOf(scope: Scope): string {
  return scope.principal.userId ?? scope.principal.tokenId;
}

/** A path's file name, checked: a bad one (`..`, `a//b`, a control character) is a 400, not a 404. */
function checkName(name: string): string {
  const problem = fileNameProblem(name);
  if (problem) throw invalid('name', problem);
  return name;
}

/** Tags from repeated values, each possibly comma-separated (`a,b`); spaces around each are dropped. */
function splitTags(values: readonly string[] | undefined): string[] | undefined {
  return values?.flatMap((value) => value.split(',').map((tag) => tag.trim()));
}

/** The metadata fields of a multipart upload that apply to its next file part. */
class PendingMeta {
  readonly #values = new Map<UploadField, string | string[]>();

  get empty(): boolean {
    return this.#values.size === 0;
  }

  get names(): string[] {
    return [...this.#values.keys()];
  }

  add(field: MultipartValue): void {
    const name = field.fieldname as UploadField;
    if (!UPLOAD_FIELDS.includes(name)) throw invalid(field.fieldname, `Unknown field ${JSON.stringify(field.fieldname)}: the metadata fields are ${UPLOAD_FIELDS.join(', ')}`);
    if (field.valueTruncated) throw invalid(name, `The field ${name} is longer than ${UPLOAD_FIELD_MAX_BYTES} bytes`);
    if (typeof field.value !== 'string') throw invalid(name, `The field ${name} is text`);
    if (name === 'tags') {
      const tags = this.#values.get('tags') as string[] | undefined;
      this.#values.set('tags', [...(tags ?? []), ...splitTags([field.value])!]);
    } else if (this.#values.has(name)) {
      throw invalid(name, `The field ${name} is given twice for one file`);
    } else {
      this.#values.set(name, field.value);
    }
  }

  input(): Partial<FileInput> {
    return {
      name: this.#values.get('name') as string | undefined,
      version: this.#values.get('version') as string | undefined,
      contentType: this.#values.get('contentType') as string | undefined,
      tags: this.#values.get('tags') as string[] | undefined,
    };
  }
}

/** What a failure of the multipart parser (its limits, a malformed or cut body) answers. */
function multipartError(error: unknown, maxBytes: number): unknown {
  if (error instanceof AppError) return error;
  switch ((error as { code?: unknown } | null)?.code) {
    case 'FST_REQ_FILE_TOO_LARGE':
      return fileTooLarge(maxBytes);
    case 'FST_FILES_LIMIT':
      return invalid('file', `An upload has at most ${UPLOAD_MAX_FILES} files`);
    case 'FST_FIELDS_LIMIT':
    case 'FST_PARTS_LIMIT':
      return invalid('fields', 'The upload has too many fields');
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return new AppError('IOTB_REQUEST_UNSUPPORTED_MEDIA_TYPE', 'POST /file/upload takes multipart/form-data');
    case 'FST_MP_PREMATURE_CLOSE':
      return new AppError('IOTB_REQUEST_VALIDATION', 'The request ended before its multipart body did: nothing was stored');
    default:
      return new AppError('IOTB_REQUEST_VALIDATION', `The multipart body is malformed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * Reads what is left of a refused upload's body and throws it away, so that the answer reaches the client and
 * the connection can carry the next request. Past DISCARD_MAX_MS the answer goes out with `Connection: close`.
 */
async function discardRest(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const raw: IncomingMessage = request.raw;
  if (raw.readableEnded || raw.destroyed) return;
  raw.unpipe();
  const done = await new Promise<boolean>((resolve) => {
    const finish = (ended: boolean) => {
      clearTimeout(timer);
      raw.off('end', onEnd).off('close', onClose).off('error', onClose);
      resolve(ended);
    };
    const onEnd = () => finish(true);
    const onClose = () => finish(raw.readableEnded);
    const timer = setTimeout(() => finish(false), DISCARD_MAX_MS);
    raw.on('end', onEnd).on('close', onClose).on('error', onClose);
    raw.resume();
  });
  if (!done) void reply.header('connection', 'close');
}

/** A request header given once (a repeated one is its first value). */
function headerOf(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function etagOf(file: StoredFile): string {
  return `"${file.sha256}"`;
}

function validators(file: StoredFile): Record<string, string> {
  return { etag: etagOf(file), 'last-modified': new Date(file.updatedAt).toUTCString() };
}

function contentHeaders(file: StoredFile, start: number, end: number, partial: boolean): Record<string, string> {
  return {
    ...validators(file),
    'content-type': file.contentType,
    'content-length': String(Math.max(end - start + 1, 0)),
    'accept-ranges': 'bytes',
    // The media type is the uploader's word: browsers must neither guess another from the bytes nor run a
    // tenant's HTML or script on the API's origin.
    'x-content-type-options': 'nosniff',
    'content-security-policy': 'sandbox',
    ...(partial ? { 'content-range': `bytes ${start}-${end}/${file.size}` } : {}),
  };
}

/** RFC 9110 13.1.2: `*`, or a list of entity tags compared weakly (`W/"x"` matches `"x"`). */
function noneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  return header.split(',').some((tag) => {
    const trimmed = tag.trim();
    return trimmed === '*' || (trimmed.startsWith('W/') ? trimmed.slice(2) : trimmed) === etag;
  });
}

const RANGE_UNIT = /^\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)\s*=\s*(.*)$/;
const RANGE_SPEC = /^(\d*)-(\d*)$/;

/**
 * The byte range a request asks for, or undefined for the whole content (RFC 9110 14.2): no Range; a unit
 * other than `bytes` (ignored); several ranges (served whole, as 14.2 lets a server do, rather than as
 * multipart/byteranges); or an If-Range that does not match the file (13.1.5). A malformed `bytes` range is
 * `IOTB_REQUEST_VALIDATION`.
 */
function requestedRange(header: string | undefined, ifRange: string | undefined, file: StoredFile): ByteRange | undefined {
  if (header === undefined) return undefined;
  const unit = RANGE_UNIT.exec(header);
  if (unit?.[1]?.toLowerCase() !== 'bytes') {
    if (unit) return undefined;
    throw invalid('range', 'The Range header is bytes=<first>-<last>, bytes=<first>- or bytes=-<suffix length>');
  }
  const specs = unit[2]!.split(',').map((spec) => spec.trim()).filter((spec) => spec !== '');
  const spec = specs.length === 1 ? RANGE_SPEC.exec(specs[0]!) : null;
  if (specs.length !== 1 || !spec || (spec[1] === '' && spec[2] === '')) {
    if (specs.length > 1 && specs.every((item) => RANGE_SPEC.test(item))) return undefined;
    throw invalid('range', 'The Range header is bytes=<first>-<last>, bytes=<first>- or bytes=-<suffix length>');
  }
  // 13.1.5: a range applies only to the representation the client has (strong comparison, or the date).
  if (ifRange !== undefined && ifRange.trim() !== etagOf(file) && ifRange.trim() !== validators(file)['last-modified']) return undefined;
  const position = (digits: string) => (digits === '' ? undefined : Math.min(Number(digits), Number.MAX_SAFE_INTEGER));
  const [first, last] = [position(spec[1]!), position(spec[2]!)];
  if (first === undefined) return { last };
  return { start: first, end: last };
}

function invalid(field: string, message: string, extra: Record<string, unknown> = {}): AppError {
  return new AppError('IOTB_REQUEST_VALIDATION', message, { field, ...extra });
}
