import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Domain } from '../../domain/domain.js';
import { timeMs } from '../../domain/time.js';
import { COLUMN_TYPES } from '../../reports/model.js';
import { SCHEDULE_PERIODS } from '../../reports/report-schedule.js';
import { reportCsv } from '../../reports/report-csv.js';
import { ENTRIES_PAGE_MAX, REPORT_COLUMNS_MAX } from '../../reports/reports.js';
import { ERROR_RESPONSES, Timestamp } from '../schemas.js';

const TAGS = ['reports'];
const Column = Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }), type: Type.Enum([...COLUMN_TYPES]) }, { additionalProperties: false });

const Email = Type.String({ minLength: 3, maxLength: 254, pattern: '^[^@\\s]+@[^@\\s]+$' });
const Schedule = Type.Object(
  {
    every: Type.Enum([...SCHEDULE_PERIODS], { description: 'The period each mail covers; it is sent when the period ends' }),
    at: Type.Optional(Type.String({ pattern: '^([01]\\d|2[0-3]):[0-5]\\d$', description: 'HH:MM UTC when a day, week or month ends (default 00:00); for `hour` only the minutes count' })),
    weekday: Type.Optional(Type.Integer({ minimum: 1, maximum: 7, description: 'For `week`: the ISO weekday it ends on, 1 Monday (default) to 7 Sunday' })),
    recipients: Type.Array(Email, { minItems: 1, maxItems: 20 }),
    bom: Type.Optional(Type.Boolean({ description: 'Start the CSV with a UTF-8 BOM for spreadsheet programs (default false)' })),
  },
  { additionalProperties: false, description: 'Mail the period\'s entries as a CSV attachment at the end of every period (needs the service\'s SMTP server)' },
);

const Report = Type.Object({
  id: Type.String(),
  accountId: Type.String(),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  columns: Type.Array(Column),
  retentionDays: Type.Integer({ description: 'Days entries are kept; 0 forever' }),
  entries: Type.Optional(Type.Integer({ description: 'GET /reports/{ref}: how many entries it holds' })),
  schedule: Type.Union([Schedule, Type.Null()]),
  nextSendAt: Type.Union([Timestamp, Type.Null()], { description: 'When the schedule mails the report next' }),
  lastSentAt: Type.Union([Timestamp, Type.Null()], { description: 'When the schedule last mailed it' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

const ReportBody = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  description: Type.Optional(Type.Union([Type.String({ maxLength: 2000 }), Type.Null()])),
  columns: Type.Optional(Type.Array(Column, { maxItems: REPORT_COLUMNS_MAX, description: 'Declared columns; keys of entries not declared are added after them' })),
  retentionDays: Type.Optional(Type.Integer({ minimum: 0, maximum: 36_500, description: 'Default 90; 0 keeps entries forever' })),
  schedule: Type.Optional(Type.Union([Schedule, Type.Null()], { description: 'null stops the mailing' })),
};

const Entry = Type.Object({ id: Type.Integer(), time: Timestamp, data: Type.Object({}, { additionalProperties: true }) });
const RefParams = Type.Object({ ref: Type.String({ minLength: 1, maxLength: 200, description: 'Report id or name' }) });
const Range = {
  from: Type.Optional(Type.String({ format: 'date-time', description: 'Inclusive' })),
  to: Type.Optional(Type.String({ format: 'date-time', description: 'Exclusive' })),
};

/** Described for the OpenAPI document; a plain object, so the stream sent is not typed as a string. */
const CsvResponse = { description: 'The CSV, streamed', content: { 'text/csv': { schema: { type: 'string' } } } };

const ms = (iso: string | undefined) => (iso === undefined ? undefined : timeMs(iso));

/** Reports (docs/reports-alerts.md): `/reports` and the CSV at `/report/details/csv`. */
export const reportRoutes: FastifyPluginAsyncTypebox<{ domain: Domain }> = async (app, { domain }) => {
  const { reports } = domain;

  app.get('/reports', { schema: { tags: TAGS, summary: "The account's reports by name", response: { 200: Type.Object({ items: Type.Array(Report) }), ...ERROR_RESPONSES } } }, async (request) => ({
    items: await reports.list(request.scope),
  }));

  app.post(
    '/reports',
    { schema: { tags: TAGS, summary: 'Create a report (report.publish also creates one on its first entry)', body: Type.Object(ReportBody, { additionalProperties: false }), response: { 201: Report, ...ERROR_RESPONSES } } },
    async (request, reply) => reply.status(201).send(await reports.create(request.scope, request.body)),
  );

  app.get('/reports/:ref', { schema: { tags: TAGS, summary: 'One report, by id or name, with its entry count', params: RefParams, response: { 200: Report, ...ERROR_RESPONSES } } }, async (request) => {
    const report = await reports.get(request.scope, request.params.ref);
    return { ...report, entries: await reports.countEntries(report) };
  });

  app.post(
    '/reports/:ref/mail',
    {
      schema: {
        tags: TAGS,
        summary: 'Mail the report as CSV now',
        description: "Default period: the schedule's last full period, or the last 24 hours; default recipients: the schedule's. The CSV is cut at 10 MiB (the mail says so).",
        params: RefParams,
        body: Type.Object({ recipients: Type.Optional(Type.Array(Email, { minItems: 1, maxItems: 20 })), ...Range }, { additionalProperties: false }),
        response: {
          200: Type.Object({ recipients: Type.Array(Type.String()), from: Timestamp, to: Timestamp, rows: Type.Integer(), truncated: Type.Boolean() }),
          ...ERROR_RESPONSES,
        },
      },
    },
    async (request) => domain.reportMailer.mailNow(request.scope, request.params.ref, { recipients: request.body.recipients, from: ms(request.body.from), to: ms(request.body.to) }),
  );

  app.patch(
    '/reports/:ref',
    {
      schema: {
        tags: TAGS,
        summary: 'Rename, describe, change retention, or add columns after the existing ones',
        params: RefParams,
        body: Type.Object({ ...ReportBody, name: Type.Optional(ReportBody.name) }, { additionalProperties: false }),
        response: { 200: Report, ...ERROR_RESPONSES },
      },
    },
    async (request) => reports.update(request.scope, request.params.ref, request.body),
  );

  app.delete('/reports/:ref', { schema: { tags: TAGS, summary: 'Delete a report and its entries', params: RefParams, response: { 204: Type.Null(), ...ERROR_RESPONSES } } }, async (request, reply) => {
    await reports.delete(request.scope, request.params.ref);
    return reply.status(204).send(null);
  });

  app.get(
    '/reports/:ref/entries',
    {
      schema: {
        tags: TAGS,
        summary: 'Entries in publication order, a page at a time (`next` names the following page)',
        params: RefParams,
        querystring: Type.Object({ ...Range, limit: Type.Optional(Type.Integer({ minimum: 1, maximum: ENTRIES_PAGE_MAX, default: 100 })), next: Type.Optional(Type.Integer({ minimum: 0 })) }),
        response: { 200: Type.Object({ items: Type.Array(Entry), next: Type.Union([Type.Integer(), Type.Null()]) }), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const { from, to, limit, next } = request.query;
      return reports.entries(request.scope, request.params.ref, { from: ms(from), to: ms(to), limit, after: next });
    },
  );

  app.post(
    '/reports/:ref/entries',
    {
      schema: {
        tags: TAGS,
        summary: 'Append an entry (as report.publish does)',
        params: RefParams,
        body: Type.Object({ data: Type.Object({}, { additionalProperties: true }), time: Type.Optional(Timestamp) }, { additionalProperties: false }),
        response: { 201: Type.Object({ reportId: Type.String(), id: Type.Integer(), time: Timestamp }), ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const report = await reports.get(request.scope, request.params.ref);
      return reply.status(201).send(await reports.publish(request.scope, report.name, request.body.data, request.body.time));
    },
  );

  app.get(
    '/report/details/csv',
    {
      schema: {
        tags: TAGS,
        summary: "A report's entries as CSV, streamed: a header row (`time` and the columns), one row per entry",
        querystring: Type.Object({ report: Type.String({ minLength: 1, maxLength: 200, description: 'Report id or name' }), ...Range, bom: Type.Optional(Type.Boolean({ default: false, description: 'Start with a UTF-8 BOM (spreadsheet programs)' })) }),
        response: { 200: CsvResponse, ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const report = await reports.get(request.scope, request.query.report);
      const filename = `${report.name.replace(/[^\w.-]+/g, '_') || 'report'}.csv`;
      return reply
        .header('content-type', 'text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="${filename}"`)
        .send(reportCsv(reports, report, { from: ms(request.query.from), to: ms(request.query.to) }, { bom: request.query.bom ?? false }));
    },
  );
};
