import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static } from 'typebox';
import type { Domain } from '../../domain/domain.js';
import { timeMs } from '../../domain/time.js';
import { AppError } from '../../errors.js';
import { logCsv } from '../../logs/log-csv.js';
import { decodeCursor, LOG_LIMIT_DEFAULT, LOG_LIMIT_MAX, LOG_TIMEOUT_DEFAULT_MS, LOG_TIMEOUT_MAX_MS } from '../../logs/logs.js';
import { LOG_LEVELS, LOG_SOURCES, type LogFilter } from '../../logs/model.js';
import { ERROR_RESPONSES, Timestamp } from '../schemas.js';

const TAGS = ['logs'];
const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T) => Type.Union([schema, Type.Null()]);

const LogEntry = Type.Object({
  id: Type.String({ description: 'Unique; entries are listed newest first' }),
  time: Timestamp,
  level: Type.Enum([...LOG_LEVELS]),
  source: Type.String({ description: `${LOG_SOURCES.join(', ')}` }),
  message: Type.String(),
  endpointId: Nullable(Type.String()),
  endpointKey: Nullable(Type.String()),
  triggerId: Nullable(Type.String()),
  data: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], { description: 'Ids and codes of the entry (execution, principal, status)' }),
});

/** The filters `GET /log` and `GET /log/csv` share. */
const Filters = {
  from: Type.Optional(Type.String({ format: 'date-time', description: 'Inclusive' })),
  to: Type.Optional(Type.String({ format: 'date-time', description: 'Exclusive' })),
  level: Type.Optional(Type.Enum([...LOG_LEVELS], { description: 'This level and the more severe ones (error > warn > info > debug)' })),
  source: Type.Optional(Type.Array(Type.Enum([...LOG_SOURCES]), { maxItems: LOG_SOURCES.length, description: 'One or more sources (repeat the parameter)' })),
  text: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Case-insensitive substring of the message' })),
  endpoint: Type.Optional(Type.String({ minLength: 1, maxLength: 800, description: 'Endpoint id, or k.<key> (entries of every endpoint with that key)' })),
  trigger: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Trigger id' })),
};
type FilterQuery = { [K in keyof typeof Filters]?: Static<(typeof Filters)[K]> | undefined };

/** Described for the OpenAPI document; a plain object, so the stream sent is not typed as a string. */
const CsvResponse = { description: 'The CSV, streamed', content: { 'text/csv': { schema: { type: 'string' } } } };

function filterOf(query: FilterQuery): LogFilter {
  const from = query.from === undefined ? undefined : timeMs(query.from);
  const to = query.to === undefined ? undefined : timeMs(query.to);
  if (from !== undefined && to !== undefined && from >= to) throw new AppError('IOTB_REQUEST_VALIDATION', 'from must be before to', { field: 'from' });
  const endpoint = query.endpoint;
  return {
    from,
    to,
    level: query.level,
    sources: query.source,
    text: query.text,
    ...(endpoint === undefined ? {} : endpoint.startsWith('k.') ? { endpointKey: endpoint.slice(2) } : { endpointId: endpoint }),
    triggerId: query.trigger,
  };
}

/** The account's log (docs/reports-alerts.md "Logs"): `GET /log` with a time budget, and `GET /log/csv`. */
export const logRoutes: FastifyPluginAsyncTypebox<{ domain: Domain }> = async (app, { domain }) => {
  const { logs } = domain;

  app.get(
    '/log',
    {
      schema: {
        tags: TAGS,
        summary: "The account's log entries, newest first; a search that runs out of time answers what it found with partial: true",
        querystring: Type.Object({
          ...Filters,
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: LOG_LIMIT_MAX, default: LOG_LIMIT_DEFAULT })),
          timeout: Type.Optional(Type.Integer({ minimum: 1, maximum: LOG_TIMEOUT_MAX_MS, default: LOG_TIMEOUT_DEFAULT_MS, description: 'Milliseconds the search may take' })),
          next: Type.Optional(Type.String({ minLength: 3, maxLength: 40, pattern: '^\\d+\\.\\d+$', description: 'The `next` of the previous answer' })),
        }),
        response: {
          200: Type.Object({
            items: Type.Array(LogEntry),
            partial: Type.Boolean({ description: 'The time ran out before every entry in the range was looked at' }),
            searchedTo: Type.Union([Timestamp, Type.Null()], { description: 'How far back the search looked; null: the whole log' }),
            next: Type.Union([Type.String(), Type.Null()], { description: 'Pass as next= to go on (after the limit, or where the time ran out); null when nothing is left' }),
          }),
          ...ERROR_RESPONSES,
        },
      },
    },
    async (request) => {
      const { limit, timeout, next, ...filters } = request.query;
      const cursor = next === undefined ? undefined : decodeCursor(next);
      if (next !== undefined && !cursor) throw new AppError('IOTB_REQUEST_VALIDATION', 'next is not a cursor of this log', { field: 'next' });
      return logs.search(request.scope, filterOf(filters), { limit: limit ?? LOG_LIMIT_DEFAULT, timeoutMs: timeout ?? LOG_TIMEOUT_DEFAULT_MS, next: cursor });
    },
  );

  app.get(
    '/log/csv',
    {
      schema: {
        tags: TAGS,
        summary: 'The same entries as CSV, streamed newest first: time, level, source, endpointKey, triggerId, message',
        querystring: Type.Object({
          ...Filters,
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000, description: 'Rows at most; absent: every matching entry' })),
          bom: Type.Optional(Type.Boolean({ default: false, description: 'Start with a UTF-8 BOM (spreadsheet programs)' })),
        }),
        response: { 200: CsvResponse, ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const { limit, bom, ...filters } = request.query;
      return reply
        .header('content-type', 'text/csv; charset=utf-8')
        .header('content-disposition', 'attachment; filename="log.csv"')
        .send(logCsv(logs, request.scope, filterOf(filters), { limit, bom: bom ?? false }));
    },
  );
};
