import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Domain } from '../../domain/domain.js';
import { AppError } from '../../errors.js';
import { ExportDocument } from '../../imex/document.js';
import { exportDocument } from '../../imex/exporter.js';
import type { ImportJobStore } from '../../imex/import-job-store.js';
import { ImportJobs, type ImportJob } from '../../imex/import-jobs.js';
import { REAL_TIME_ITEMS } from '../../imex/importer.js';
import { PASSPHRASE_MIN_LENGTH, Sealer } from '../../imex/sealing.js';
import type { Scope } from '../../domain/scope.js';
import type { BootstrapConfigs } from '../../lwm2m/bootstrap/configs.js';
import { ERROR_RESPONSES, Timestamp } from '../schemas.js';

const TAGS = ['imex'];
/** Where the passphrase of sealed secrets travels: a header, so it stays out of URLs and access logs. */
const PASSPHRASE_HEADER = 'x-iotbridge-passphrase';
/** How long `POST /imex/import` waits for a job before answering 202 with its id. */
const ANSWER_WAIT_MS = 2000;

const Job = Type.Object({
  jobId: Type.String(),
  state: Type.Enum(['running', 'done', 'failed']),
  dryRun: Type.Boolean({ description: 'Nothing was written: the counts say what the import would do' }),
  processed: Type.Integer({ description: 'Items read so far' }),
  created: Type.Integer(),
  updated: Type.Integer(),
  unchanged: Type.Integer(),
  refusedCount: Type.Integer({ description: 'Items refused (the first 1,000 are listed in `refused`)' }),
  refused: Type.Array(Type.Object({ section: Type.String(), item: Type.String({ description: 'The name or key of the item, or #<position>' }), reason: Type.String() })),
  startedAt: Timestamp,
  finishedAt: Type.Union([Timestamp, Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()], { description: 'Why a failed job stopped' }),
});

function shown(job: ImportJob) {
  return { jobId: job.id, state: job.state, dryRun: job.dryRun, ...job.counts, refused: [...job.counts.refused], startedAt: job.startedAt, finishedAt: job.finishedAt, error: job.error };
}

/** Bytes of the body, refused past `max` (413, nothing imported). */
function limited(max: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      seen += chunk.length;
      done(seen > max ? new AppError('IOTB_REQUEST_BODY_TOO_LARGE', `An import document is at most ${max} bytes (IOTBRIDGE_IMPORT_MAX_BYTES)`) : null, chunk);
    },
  });
}

/**
 * Import and export of an account's configuration (docs/imex.md). The import body is never parsed whole: it is
 * written to a temporary file as it arrives, then read section by section by the job.
 */
export const imexRoutes: FastifyPluginAsyncTypebox<{ domain: Domain; jobStore: ImportJobStore; importMaxBytes: number; bootstrapConfigs?: BootstrapConfigs | undefined }> = async (
  app,
  { domain, jobStore, importMaxBytes, bootstrapConfigs },
) => {
  const jobs = new ImportJobs(domain, jobStore, { bootstrapConfigs });
  app.addHook('onClose', async () => jobs.stop());
  // In this plugin only: JSON bodies arrive as the raw stream, of any size up to the import limit.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { bodyLimit: importMaxBytes }, (_request, payload, done) => done(null, payload));

  app.get(
    '/imex/export',
    {
      schema: {
        tags: TAGS,
        summary: "The acting account's configuration as one import document, streamed",
        description:
          'Services, triggers (library ones and globals), endpoints with stored objects, DTLS security and bootstrap configurations, geofences, reports, alert rules, file information. ' +
          `Secrets stay behind unless \`secrets=true\`: then each is sealed with a key derived from the passphrase in the header \`${PASSPHRASE_HEADER}\` (at least ${PASSPHRASE_MIN_LENGTH} characters).`,
        querystring: Type.Object({ secrets: Type.Optional(Type.Boolean({ default: false, description: 'Export device password hashes, PSKs, bootstrap keys, service and webhook secrets, sealed' })) }),
        headers: Type.Object({ [PASSPHRASE_HEADER]: Type.Optional(Type.String({ maxLength: 1024 })) }),
        response: { 200: { description: 'The document', content: { 'application/json': { schema: ExportDocument } } }, ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const name = `iotbridge-export-${request.scope.accountId}-${new Date().toISOString().slice(0, 10)}.json`;
      const sealer = request.query.secrets ? await Sealer.forExport(request.headers[PASSPHRASE_HEADER]) : undefined;
      return reply
        .type('application/json; charset=utf-8')
        .header('content-disposition', `attachment; filename="${name}"`)
        .send(Readable.from(exportDocument(domain, request.scope, { sealer, bootstrapConfigs })) as never);
    },
  );

  const start = async (request: { scope: Scope; body: unknown; headers: Record<string, string | string[] | undefined> }, dryRun: boolean): Promise<ImportJob> => {
    if (!(request.body instanceof Readable)) throw new AppError('IOTB_IMPORT_DOCUMENT', 'Send the document as the JSON body');
    const file = path.join(tmpdir(), `iotbridge-import-${randomUUID()}.json`);
    try {
      await pipeline(request.body, limited(importMaxBytes), createWriteStream(file));
    } catch (error) {
      await rm(file, { force: true });
      throw error instanceof AppError ? error : new AppError('IOTB_IMPORT_DOCUMENT', 'The document could not be read to its end');
    }
    const passphrase = request.headers[PASSPHRASE_HEADER];
    return jobs.start(request.scope, file, { dryRun, passphrase: typeof passphrase === 'string' ? passphrase : undefined });
  };

  app.post(
    '/imex/import',
    {
      schema: {
        tags: TAGS,
        summary: 'Import a document into the acting account, as a job',
        description:
          `The first ${REAL_TIME_ITEMS} items go through the real-time path, the rest in bulk mode. Answers the finished job (200) when it is done within ` +
          `${ANSWER_WAIT_MS / 1000} s, else 202 with the running job: follow GET /imex/jobs/{id}. Idempotent: importing the same document again changes nothing.`,
        querystring: Type.Object({ dryRun: Type.Optional(Type.Boolean({ default: false, description: 'Report what would change; write nothing' })) }),
        body: ExportDocument,
        response: { 200: Job, 202: Job, ...ERROR_RESPONSES },
      },
      // The body is a stream here (the parser above): it is checked by the job, item by item.
      validatorCompiler: () => () => true,
    },
    async (request, reply) => {
      const job = await start(request, request.query.dryRun ?? false);
      await jobs.wait(job, ANSWER_WAIT_MS);
      return reply.status(job.state === 'running' ? 202 : 200).send(shown(job));
    },
  );

  app.post(
    '/import',
    {
      schema: {
        tags: TAGS,
        summary: 'Import a document and answer when it is done',
        description: 'As POST /imex/import, waiting for the end. Globals of triggers that are protected in the account keep their values.',
        body: ExportDocument,
        response: { 200: Job, ...ERROR_RESPONSES },
      },
      validatorCompiler: () => () => true,
    },
    async (request) => {
      const job = await start(request, false);
      await jobs.wait(job);
      return shown(job);
    },
  );

  app.get(
    '/imex/jobs/:id',
    { schema: { tags: TAGS, summary: 'An import job of the acting account: progress, counts, refusals', params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) }), response: { 200: Job, ...ERROR_RESPONSES } } },
    async (request) => shown(await jobs.get(request.scope, request.params.id)),
  );
};
