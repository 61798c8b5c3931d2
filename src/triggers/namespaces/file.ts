import { AppError } from '../../errors.js';
import { objectArg, ScriptArgumentError, stringArg, stringField, type Namespace, type ScriptContext } from './namespace.js';

/** The most bytes one `file.read` returns (1 MiB): larger files are read in pieces with `offset`. */
export const FILE_READ_MAX_BYTES = 1024 * 1024;
const ENCODINGS = ['base64', 'utf8', 'hex'] as const;
type ReadEncoding = (typeof ENCODINGS)[number];

/** What `file.read` answers. */
export interface FileReadResult {
  /** The bytes read, in `encoding`. */
  readonly data: string;
  readonly encoding: ReadEncoding;
  /** Where the bytes start in the file. */
  readonly offset: number;
  /** How many bytes were read: fewer than asked at the end of the file, 0 at or past it. */
  readonly length: number;
  /** The file's size in bytes. */
  readonly size: number;
  /** True when the read reached the end of the file. */
  readonly eof: boolean;
  /** The content read from: compare it between pieces to notice a file replaced meanwhile. */
  readonly sha256: string;
}

/**
 * `file.*`: the account's file repository (docs/files.md "Scripts"), read-only. Names are as in the HTTP API
 * (`firmware/v1.bin`); a file of another account is never found.
 */
export const fileNamespace: Namespace = {
  name: 'file',
  functions: {
    /**
     * file.info(name) → {name, size, sha256, contentType, version, tags, createdBy, createdAt, updatedAt}, or
     * null when the account has no such file. Example: `var fw = file.info('firmware/v1.bin'); if (fw) log(fw.size);`
     */
    info: async (context, args) => {
      try {
        return await context.domain.files.info(context.scope.accountId, stringArg(args, 0, 'name'));
      } catch (error) {
        if (error instanceof AppError && error.code === 'IOTB_FILE_NOT_FOUND') return null;
        throw coded(error);
      }
    },
    /**
     * file.read(name, {offset, length, encoding}?) → {data, encoding, offset, length, size, eof, sha256}: up to
     * `length` bytes (default and at most 1048576) from `offset` (default 0), as `encoding` (`base64`, the
     * default; `hex`; `utf8`, which may split a character at the edges of a piece). At or past the end: no
     * bytes and `eof: true`. Fails with `IOTB_FILE_NOT_FOUND: …` when the account has no such file. Example:
     * `var piece = file.read('config.json', { encoding: 'utf8' }); var config = JSON.parse(piece.data);`
     */
    read: async (context, args) => read(context, stringArg(args, 0, 'name'), objectArg(args, 1, 'options')),
  },
};

async function read(context: ScriptContext, name: string, options: Record<string, unknown>): Promise<FileReadResult> {
  const offset = wholeNumber(options.offset, 'offset', 0);
  const length = wholeNumber(options.length, 'length', FILE_READ_MAX_BYTES);
  if (length > FILE_READ_MAX_BYTES) throw new ScriptArgumentError(`length is at most ${FILE_READ_MAX_BYTES} bytes (1 MiB) per call: read a larger file in pieces with offset`);
  const encoding = stringField(options, 'encoding') ?? 'base64';
  if (!(ENCODINGS as readonly string[]).includes(encoding)) throw new ScriptArgumentError(`encoding is one of ${ENCODINGS.join(', ')}`);
  const { accountId } = context.scope;
  try {
    if (length > 0) {
      const opened = await context.domain.files.read(accountId, name, { start: offset, end: offset + length - 1 });
      const chunks: Buffer[] = [];
      for await (const chunk of opened.stream) chunks.push(chunk as Buffer);
      return piece(opened.file, Buffer.concat(chunks), offset, encoding as ReadEncoding);
    }
  } catch (error) {
    if (!(error instanceof AppError && error.code === 'IOTB_FILE_RANGE_NOT_SATISFIABLE')) throw coded(error);
  }
  // No bytes asked, or none there: at or past the end a read answers nothing, as fs.read does, rather than an error.
  try {
    return piece(await context.domain.files.info(accountId, name), Buffer.alloc(0), offset, encoding as ReadEncoding);
  } catch (error) {
    throw coded(error);
  }
}

function piece(file: { size: number; sha256: string }, bytes: Buffer, offset: number, encoding: ReadEncoding): FileReadResult {
  return { data: bytes.toString(encoding), encoding, offset, length: bytes.length, size: file.size, eof: offset + bytes.length >= file.size, sha256: file.sha256 };
}

function wholeNumber(value: unknown, name: string, fallback: number): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw new ScriptArgumentError(`${name} is a whole number ≥ 0`);
  return value;
}

/** AppErrors reach the script as `IOTB_CODE: message`, so it can tell a missing file from a bad name. */
function coded(error: unknown): unknown {
  return error instanceof AppError ? new Error(`${error.code}: ${error.message}`) : error;
}
