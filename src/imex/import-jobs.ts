import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Writable, type Duplex, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import parserStream from 'stream-json';
import pick from 'stream-json/filters/pick.js';
import streamArray from 'stream-json/streamers/stream-array.js';
import streamValues from 'stream-json/streamers/stream-values.js';
import type { Domain } from '../domain/domain.js';
import { newId } from '../domain/ids.js';
import type { Scope } from '../domain/scope.js';
import { isoTime } from '../domain/time.js';
import { AppError } from '../errors.js';
import { DOCUMENT_FORMAT, DOCUMENT_VERSION, SECTIONS, type Section } from './document.js';
import type { ImportJobRecord, ImportJobStore } from './import-job-store.js';
import { Importer, type ImportCounts } from './importer.js';
import { Sealer, SecretsHeader } from './sealing.js';
import type { BootstrapConfigs } from '../lwm2m/bootstrap/configs.js';
import { Value } from 'typebox/value';

/** A running job writes its progress this often (its heartbeat)… */
const HEARTBEAT_MS = 2_000;
/** …and one whose heartbeat is older than this is taken as stopped with the process that ran it. */
const STALE_MS = 15_000;
/** Finished jobs can be read back for this long. */
const JOB_KEPT_MS = 7 * 24 * 60 * 60_000;
const INTERRUPTED =
  'The service stopped while this import ran (a restart or a crash). What it wrote is kept: import the same document again to finish it (imports are idempotent).';

export interface ImportJob {
  readonly id: string;
  readonly accountId: string;
  state: 'running' | 'done' | 'failed';
  readonly dryRun: boolean;
  readonly startedAt: string;
  finishedAt: string | null;
  error: string | null;
  readonly counts: ImportCounts;
}

/** A job running in this process, and the chain of its record's writes (so they land in order). */
interface LiveJob {
  readonly job: ImportJob;
  readonly finished: Promise<void>;
  saved: Promise<void>;
}

/**
 * Import jobs (`POST /imex/import`, `GET /imex/jobs/{id}`): the document, already spooled to a file, is read
 * section by section by a streaming JSON parser (stream-json), so memory stays flat whatever its size; progress
 * is the Importer's counts, read while it runs. Each job is stored (ImportJobStore) when it starts, every few
 * seconds while it runs and when it ends, so its id keeps answering after a restart and on other nodes; a job
 * whose process stopped is shown failed, saying to import again (imports are idempotent; docs/imex.md).
 */
export class ImportJobs {
  readonly #domain: Domain;
  readonly #store: ImportJobStore;
  readonly #bootstrapConfigs: BootstrapConfigs | undefined;
  readonly #live = new Map<string, LiveJob>();

  constructor(domain: Domain, store: ImportJobStore, options: { bootstrapConfigs?: BootstrapConfigs | undefined } = {}) {
    this.#domain = domain;
    this.#store = store;
    this.#bootstrapConfigs = options.bootstrapConfigs;
  }

  /**
   * Checks the document's format and version (400 when it is not an import document) and, when it holds sealed
   * secrets, the passphrase (400 `IOTB_IMEX_PASSPHRASE`), then stores and starts the job.
   */
  async start(scope: Scope, file: string, options: { dryRun: boolean; passphrase?: string | undefined }): Promise<ImportJob> {
    let sealer: Sealer | undefined;
    try {
      const secrets = await checkHeader(file);
      sealer = secrets && (await Sealer.forImport(secrets, options.passphrase));
    } catch (error) {
      await rm(file, { force: true });
      throw error;
    }
    const now = Date.now();
    await this.#store.deleteFinishedBefore(now - JOB_KEPT_MS);
    const importer = new Importer(this.#domain, scope, { dryRun: options.dryRun, sealer, bootstrapConfigs: this.#bootstrapConfigs });
    const job: ImportJob = { id: newId(), accountId: scope.accountId, state: 'running', dryRun: options.dryRun, startedAt: isoTime(now), finishedAt: null, error: null, counts: importer.counts };
    try {
      await this.#store.save(recordOf(job));
    } catch (error) {
      await rm(file, { force: true });
      throw error;
    }
    const heartbeat = setInterval(() => this.#save(live), HEARTBEAT_MS);
    const finished = importer
      .run((section) => readSection(file, section, (reason) => importer.refuse('document', section, reason)))
      .then(
        () => void (job.state = 'done'),
        (error: unknown) => {
          job.state = 'failed';
          job.error = error instanceof AppError ? `${error.code}: ${error.message}` : error instanceof Error ? error.message : String(error);
        },
      )
      .finally(async () => {
        clearInterval(heartbeat);
        job.finishedAt = isoTime(Date.now());
        await rm(file, { force: true });
        this.#save(live);
        await live.saved;
        this.#live.delete(job.id);
      });
    const live: LiveJob = { job, finished, saved: Promise.resolve() };
    this.#live.set(job.id, live);
    return job;
  }

  /** The account's job: live from this process while it runs here, else as stored. 404 for other accounts' jobs. */
  async get(scope: Scope, id: string): Promise<ImportJob> {
    const live = this.#live.get(id)?.job;
    if (live) {
      if (live.accountId !== scope.accountId) throw new AppError('IOTB_IMPORT_JOB_NOT_FOUND');
      return live;
    }
    let record = await this.#store.get(scope.accountId, id);
    if (record?.state === 'running' && record.updatedAt < Date.now() - STALE_MS) {
      await this.#store.failStale(Date.now() - STALE_MS, INTERRUPTED, Date.now());
      record = await this.#store.get(scope.accountId, id);
    }
    if (!record) throw new AppError('IOTB_IMPORT_JOB_NOT_FOUND');
    return jobOf(record);
  }

  /** Waits for the job to finish, at most `ms` (undefined: until it does). */
  async wait(job: ImportJob, ms?: number): Promise<void> {
    const finished = this.#live.get(job.id)?.finished;
    if (!finished) return;
    if (ms === undefined) return finished;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([finished, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
  }

  /** Waits for every job under way (the service's stop). */
  async stop(): Promise<void> {
    await Promise.all([...this.#live.values()].map((entry) => entry.finished));
  }

  /** Queues a write of the job's record after the ones before it; a failed write is retried by the next one. */
  #save(live: LiveJob): void {
    live.saved = live.saved.then(() => this.#store.save(recordOf(live.job))).catch(() => undefined);
  }
}

function recordOf(job: ImportJob): ImportJobRecord {
  return {
    id: job.id,
    accountId: job.accountId,
    state: job.state,
    dryRun: job.dryRun,
    counts: { ...job.counts, refused: [...job.counts.refused] },
    error: job.error,
    startedAt: Date.parse(job.startedAt),
    finishedAt: job.finishedAt === null ? null : Date.parse(job.finishedAt),
    updatedAt: Date.now(),
  };
}

function jobOf(record: ImportJobRecord): ImportJob {
  return {
    id: record.id,
    accountId: record.accountId,
    state: record.state,
    dryRun: record.dryRun,
    startedAt: isoTime(record.startedAt),
    finishedAt: record.finishedAt === null ? null : isoTime(record.finishedAt),
    error: record.error,
    counts: record.counts,
  };
}

/** The document's `format`, `version` and `secrets` header, read by the same streaming parser; a parse error is the document's. */
async function checkHeader(file: string): Promise<SecretsHeader | undefined> {
  let format: unknown;
  let version: unknown;
  let secrets: unknown;
  try {
    await wholeJson(file);
    [format, version, secrets] = [await firstValue(file, 'format'), await firstValue(file, 'version'), await firstValue(file, 'secrets')];
  } catch (error) {
    throw new AppError('IOTB_IMPORT_DOCUMENT', `The document is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (format !== DOCUMENT_FORMAT) throw new AppError('IOTB_IMPORT_DOCUMENT', `The document's "format" is not "${DOCUMENT_FORMAT}" (GET /imex/export writes it)`);
  if (typeof version !== 'number' || version > DOCUMENT_VERSION) {
    throw new AppError('IOTB_IMPORT_DOCUMENT', `The document's "version" is ${JSON.stringify(version)}: this service reads versions up to ${DOCUMENT_VERSION}`);
  }
  if (secrets === undefined) return undefined;
  if (!Value.Check(SecretsHeader, secrets)) throw new AppError('IOTB_IMPORT_DOCUMENT', 'The document\'s "secrets" header is not one GET /imex/export writes');
  return secrets;
}

/** Reads the file through the tokenizer once: a truncated or broken document is refused before anything is imported. */
async function wholeJson(file: string): Promise<void> {
  const discard = new Writable({ objectMode: true, write: (_token, _encoding, done) => done() });
  await pipeline(createReadStream(file), parserStream(), discard);
}

/**
 * The value of a top-level key, reading the file only until it is found (export documents start with their
 * header). Parses the whole file when the key is absent, which also finds a document that is not JSON.
 */
async function firstValue(file: string, key: string): Promise<unknown> {
  const source = createReadStream(file);
  const values = piped(source, parserStream(), pick.asStream({ filter: key, once: true }), streamValues.asStream());
  try {
    for await (const { value } of values as AsyncIterable<{ value: unknown }>) return value;
    return undefined;
  } finally {
    source.destroy();
  }
}

/** The items of one section, streamed; a section that is not a list is reported once and yields nothing. */
async function* readSection(file: string, section: Section, refuse: (reason: string) => void): AsyncGenerator<unknown> {
  if (!SECTIONS.includes(section)) return;
  const items = piped(createReadStream(file), parserStream(), pick.asStream({ filter: section }), streamArray.asStream());
  try {
    for await (const { value } of items as AsyncIterable<{ value: unknown }>) yield value;
  } catch (error) {
    refuse(`the section "${section}" is not a list of items: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** `a.pipe(b).pipe(c)` whose last stream fails when any of them does (`pipe` alone leaves a reader waiting forever). */
function piped(...streams: [Readable, ...Duplex[]]): Readable {
  const last = streams[streams.length - 1]!;
  for (let i = 0; i + 1 < streams.length; i++) streams[i]!.pipe(streams[i + 1] as Duplex);
  for (const stream of streams.slice(0, -1)) stream.on('error', (error) => last.destroy(error));
  return last;
}
