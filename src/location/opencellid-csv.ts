import type { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import { AppError } from '../errors.js';
import { normaliseMac, openCellIdRadio, type OpenCellIdRadio } from './geolocation-input.js';

/** A cell of the OpenCelliD CSV, checked. */
export interface CellRow {
  readonly radio: OpenCellIdRadio;
  readonly mcc: number;
  /** `net`: the MNC (the SID for CDMA). */
  readonly mnc: number;
  /** LAC, TAC or NID. */
  readonly area: number;
  readonly cell: number;
  readonly lon: number;
  readonly lat: number;
  /** Metres: how far from lat/lon the cell was heard. */
  readonly range: number;
  /** How many measurements the position comes from; 0 when the column is absent. */
  readonly samples: number;
}

/** A Wi-Fi access point of a `mac,lon,lat,range` CSV. */
export interface WifiRow {
  /** Lower-case, colon-separated. */
  readonly mac: string;
  readonly lon: number;
  readonly lat: number;
  readonly range: number;
}

export interface ImportProgress {
  readonly rows: number;
  readonly rejected: number;
  /** Bytes of the input parsed so far. */
  readonly bytes: number;
}

export interface CsvReadOptions {
  /** Rows handed to `onBatch` at a time; default 5000. */
  readonly batchSize?: number;
  /** Called after each batch and once at the end. */
  readonly onProgress?: (progress: ImportProgress) => void;
  /** Stops the reading: the promise rejects with the signal's reason; batches already given stay given. */
  readonly signal?: AbortSignal;
}

export interface CsvReadResult {
  /** Rows handed to `onBatch`. */
  readonly rows: number;
  /** Lines with a bad value, skipped. */
  readonly rejected: number;
  /** The first FIRST_ERRORS_KEPT of them, with their 1-based line numbers. */
  readonly firstErrors: ReadonlyArray<{ readonly line: number; readonly message: string }>;
}

export const DEFAULT_BATCH_SIZE = 5000;
export const FIRST_ERRORS_KEPT = 20;
/** A line of these files is under 200 bytes: a longer one is not this format (and is not buffered without bound). */
const MAX_LINE_BYTES = 64 * 1024;
const UINT32_MAX = 2 ** 32 - 1;
const CELL_MAX = 2 ** 36 - 1;

/**
 * Reads the OpenCelliD cell CSV (`radio,mcc,net,area,cell,unit,lon,lat,range,samples,changeable,created,updated,averageSignal`;
 * the columns after `range` may be absent; a header line is detected and skipped). Rows go to `onBatch` in
 * batches, and no more input is read until onBatch's promise settles, so a slow database slows the upload
 * instead of filling memory. A line with a bad value is counted in `rejected` and skipped, never stopping the
 * import; only a line over 64 KiB stops it (IOTB_REQUEST_VALIDATION, field `file`). The input must be plain
 * text: pipe a `.csv.gz` download through `zlib.createGunzip()` first. The input is unpiped, not destroyed, at the end.
 *
 * @example await readOpenCellIdCsv(createReadStream('cell_towers.csv'), (rows) => store.insertCells(rows), { onProgress: console.log })
 */
export function readOpenCellIdCsv(input: Readable, onBatch: (rows: CellRow[]) => Promise<void>, options: CsvReadOptions = {}): Promise<CsvReadResult> {
  return readRows(input, (fields) => fields[0]?.trim().toLowerCase() === 'radio', cellRow, onBatch, options);
}

/**
 * Reads a Wi-Fi access point CSV: `mac,lon,lat,range` (a `mac` header line is detected and skipped), with the
 * batching, progress and rejection rules of readOpenCellIdCsv. MACs are normalised to `aa:bb:cc:dd:ee:ff`.
 */
export function readWifiCsv(input: Readable, onBatch: (rows: WifiRow[]) => Promise<void>, options: CsvReadOptions = {}): Promise<CsvReadResult> {
  return readRows(input, (fields) => ['mac', 'bssid', 'macaddress'].includes(fields[0]?.trim().toLowerCase() ?? ''), wifiRow, onBatch, options);
}

/** A parsed row, or why the line was rejected. */
type RowOrProblem<Row> = Row | string;

async function readRows<Row extends object>(
  input: Readable,
  isHeader: (fields: string[]) => boolean,
  toRow: (fields: string[]) => RowOrProblem<Row>,
  onBatch: (rows: Row[]) => Promise<void>,
  options: CsvReadOptions,
): Promise<CsvReadResult> {
  const batchSize = Math.max(1, Math.floor(options.batchSize ?? DEFAULT_BATCH_SIZE));
  const { onProgress, signal } = options;
  signal?.throwIfAborted();
  // No quoting: these files hold no quoted fields, and an unbalanced quote must cost one line, not the rest of
  // the file. So every line is exactly one record, and the record count is the line number.
  const parser = parse({ quote: false, bom: true, relax_column_count: true, skip_empty_lines: false, record_delimiter: ['\r\n', '\n'], max_record_size: MAX_LINE_BYTES });
  const forwardError = (error: Error) => parser.destroy(error);
  input.once('error', forwardError);
  input.pipe(parser);

  let line = 0;
  let rows = 0;
  let rejected = 0;
  const firstErrors: { line: number; message: string }[] = [];
  let batch: Row[] = [];
  const progress = () => onProgress?.({ rows, rejected, bytes: parser.info.bytes });
  const flush = async () => {
    if (batch.length === 0) return;
    const full = batch;
    batch = [];
    await onBatch(full);
    rows += full.length;
  };

  try {
    for await (const fields of parser as AsyncIterable<string[]>) {
      line++;
      if (signal?.aborted) throw signal.reason;
      if (fields.length === 1 && fields[0]?.trim() === '') continue;
      if (line === 1 && isHeader(fields)) continue;
      const row = toRow(fields);
      if (typeof row === 'string') {
        rejected++;
        if (firstErrors.length < FIRST_ERRORS_KEPT) firstErrors.push({ line, message: row });
        continue;
      }
      batch.push(row);
      if (batch.length >= batchSize) {
        await flush();
        progress();
        signal?.throwIfAborted();
      }
    }
    await flush();
    progress();
    return { rows, rejected, firstErrors };
  } catch (error) {
    if ((error as { code?: unknown }).code === 'CSV_MAX_RECORD_SIZE') {
      throw new AppError('IOTB_REQUEST_VALIDATION', `Line ${line + 1} is longer than ${MAX_LINE_BYTES} bytes: the file is not in this CSV format`, { field: 'file', line: line + 1 });
    }
    throw error;
  } finally {
    input.off('error', forwardError);
    input.unpipe(parser);
    parser.destroy();
  }
}

function cellRow(fields: string[]): RowOrProblem<CellRow> {
  if (fields.length < 9) return `expected at least 9 columns (radio,mcc,net,area,cell,unit,lon,lat,range), got ${fields.length}`;
  const radioText = clean(fields[0]);
  const radio = openCellIdRadio(radioText);
  if (!radio || radioText.toUpperCase() === 'WCDMA') return `radio is GSM, UMTS, CDMA, LTE or NR, not ${quoteValue(radioText)}`;
  const mcc = wholeNumber(fields[1]);
  if (!inRange(mcc, 0, 999)) return `mcc is a whole number from 0 to 999, not ${quoteValue(fields[1])}`;
  const mnc = wholeNumber(fields[2]);
  const mncMax = radio === 'CDMA' ? 32767 : 999;
  if (!inRange(mnc, 0, mncMax)) return `net is a whole number from 0 to ${mncMax}, not ${quoteValue(fields[2])}`;
  const area = wholeNumber(fields[3]);
  if (!inRange(area, 0, UINT32_MAX)) return `area is a whole number from 0 to ${UINT32_MAX}, not ${quoteValue(fields[3])}`;
  const cell = wholeNumber(fields[4]);
  if (!inRange(cell, 0, CELL_MAX)) return `cell is a whole number from 0 to ${CELL_MAX}, not ${quoteValue(fields[4])}`;
  const position = lonLatRange(fields[6], fields[7], fields[8]);
  if (typeof position === 'string') return position;
  let samples = 0;
  if (fields[9] !== undefined && clean(fields[9]) !== '') {
    samples = wholeNumber(fields[9]);
    if (!inRange(samples, 0, Number.MAX_SAFE_INTEGER)) return `samples is a whole number, not ${quoteValue(fields[9])}`;
  }
  return { radio, mcc, mnc, area, cell, ...position, samples };
}

function wifiRow(fields: string[]): RowOrProblem<WifiRow> {
  if (fields.length < 4) return `expected 4 columns (mac,lon,lat,range), got ${fields.length}`;
  const mac = normaliseMac(clean(fields[0]));
  if (!mac) return `mac is a MAC address (aa:bb:cc:dd:ee:ff), not ${quoteValue(fields[0])}`;
  const position = lonLatRange(fields[1], fields[2], fields[3]);
  if (typeof position === 'string') return position;
  return { mac, ...position };
}

function lonLatRange(lonText: string | undefined, latText: string | undefined, rangeText: string | undefined): RowOrProblem<{ lon: number; lat: number; range: number }> {
  const lon = decimal(lonText);
  if (!inRange(lon, -180, 180)) return `lon is a longitude from -180 to 180, not ${quoteValue(lonText)}`;
  const lat = decimal(latText);
  if (!inRange(lat, -90, 90)) return `lat is a latitude from -90 to 90, not ${quoteValue(latText)}`;
  const range = decimal(rangeText);
  if (!inRange(range, 0, Number.MAX_SAFE_INTEGER)) return `range is metres (0 or more), not ${quoteValue(rangeText)}`;
  return { lon, lat, range };
}

/** The field without blanks and without quotes around it (the parser does not treat quotes). */
function clean(field: string | undefined): string {
  const text = (field ?? '').trim();
  return text.length >= 2 && text.startsWith('"') && text.endsWith('"') ? text.slice(1, -1).trim() : text;
}

/** NaN when empty or not a number (`Number('')` would be 0). */
function decimal(field: string | undefined): number {
  const text = clean(field);
  return text === '' ? Number.NaN : Number(text);
}

function wholeNumber(field: string | undefined): number {
  const value = decimal(field);
  return Number.isInteger(value) ? value : Number.NaN;
}

function inRange(value: number, min: number, max: number): boolean {
  return value >= min && value <= max; // false for NaN
}

function quoteValue(field: string | undefined): string {
  const text = (field ?? '').trim();
  return text === '' ? 'empty' : JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
}
