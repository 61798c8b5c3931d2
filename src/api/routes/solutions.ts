import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Domain } from '../../domain/domain.js';
import { SECTIONS } from '../../imex/document.js';
import { TEMPLATE_MAX_BYTES, TemplateInput, TemplateVersion } from '../../solutions/catalogue.js';
import { HISTORY_ACTIONS, OUTCOMES, type Installation, type Template } from '../../solutions/model.js';
import { ParameterDefinition } from '../../solutions/parameters.js';
import { ERROR_RESPONSES, IdParams, List, PageQuery, Timestamp } from '../schemas.js';

const TAGS = ['solutions'];
const Json = Type.Record(Type.String(), Type.Unknown());

const TemplateFields = {
  id: Type.String(),
  accountId: Type.String({ description: 'The account that uploaded it' }),
  inherited: Type.Boolean({ description: 'True for a template of a parent account: installable, not changeable here' }),
  name: Type.String(),
  version: TemplateVersion,
  description: Type.String(),
  parameters: Type.Record(Type.String(), ParameterDefinition),
  createdBy: Type.String(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
};
const TemplateSummary = Type.Object(TemplateFields);
const TemplateFull = Type.Object({ ...TemplateFields, document: Json });

const FromFile = Type.Object(
  {
    file: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'A file of the account\'s repository: `.json`, or `.zip` holding template.json' })),
    fileId: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'The same as `file`: a repository file is identified by its name' })),
  },
  { additionalProperties: false, minProperties: 1, maxProperties: 1 },
);

const ItemNote = Type.Object({ section: Type.Enum([...SECTIONS]), item: Type.String({ description: 'Name, or `<service>/<key>` for an endpoint' }), reason: Type.Optional(Type.String()) });
const Counts = Type.Object({ created: Type.Integer(), updated: Type.Integer(), unchanged: Type.Integer(), refusedCount: Type.Integer() });

const InstallResult = Type.Object({
  installationId: Type.String(),
  action: Type.Enum(['install', 'upgrade']),
  outcome: Type.Enum([...OUTCOMES], { description: 'done: every item applied; partial: some refused; failed: none applied' }),
  template: Type.String(),
  version: Type.String(),
  previousVersion: Type.Union([Type.String(), Type.Null()]),
  counts: Counts,
  refused: Type.Array(Type.Object({ section: Type.String(), item: Type.String(), reason: Type.String() })),
  kept: Type.Array(ItemNote, { description: 'Items the user edited since the previous version was applied: left as they are' }),
  removed: Type.Array(ItemNote, { description: 'Items of the previous version the new one no longer has' }),
  onceEvents: Type.Array(Type.String(), { description: 'Triggers sent their once-event by this call' }),
});

const UninstallResult = Type.Object({
  installationId: Type.String(),
  outcome: Type.Enum([...OUTCOMES], { description: 'partial: some items could not be removed (`kept` says why)' }),
  removed: Type.Array(ItemNote),
  kept: Type.Array(ItemNote, { description: 'Edited since the install, or not removable' }),
});

const InstallationBody = Type.Object({
  id: Type.String(),
  accountId: Type.String(),
  templateId: Type.String(),
  template: Type.String(),
  version: Type.String(),
  parameters: Json,
  items: Type.Array(Type.Object({ section: Type.Enum([...SECTIONS]), item: Type.String(), created: Type.Boolean({ description: 'Created by this installation: an uninstall removes it unless edited' }) })),
  installedAt: Timestamp,
  updatedAt: Timestamp,
  by: Type.String(),
});

const HistoryItem = Type.Object({
  id: Type.String(),
  template: Type.String(),
  templateId: Type.String(),
  version: Type.String(),
  action: Type.Enum([...HISTORY_ACTIONS]),
  outcome: Type.Enum([...OUTCOMES]),
  at: Timestamp,
  by: Type.String({ description: 'The user, or else the token, that acted' }),
  parameters: Json,
  accountId: Type.String(),
  installationId: Type.String(),
  details: Json,
});

function shownTemplate(template: Omit<Template, 'document'>, accountId: string) {
  const { accountPath: _path, ...shown } = template;
  return { ...shown, inherited: template.accountId !== accountId };
}

function shownInstallation(installation: Installation) {
  const { snapshot, templateName, ...rest } = installation;
  return {
    ...rest,
    template: templateName,
    items: snapshot.map((item) => ({ section: item.section, item: item.service === undefined ? item.name : `${item.service}/${item.name}`, created: item.created })),
  };
}

/** Solution templates (docs/templates.md): the catalogue, installs, upgrades, uninstalls and their history. */
export const solutionRoutes: FastifyPluginAsyncTypebox<{ domain: Domain }> = async (app, { domain }) => {
  const { solutions } = domain;

  app.get(
    '/solutions/templates',
    {
      schema: {
        tags: TAGS,
        summary: "Templates the acting account sees: its own and its ancestors' (the root account's are everyone's)",
        querystring: Type.Object({ ...PageQuery, name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })) }),
        response: { 200: List(TemplateSummary), ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const page = await solutions.templates.list(request.scope, request.query);
      return { ...page, items: page.items.map((template) => shownTemplate(template, request.scope.accountId)) };
    },
  );

  app.post(
    '/solutions/templates',
    {
      bodyLimit: TEMPLATE_MAX_BYTES,
      schema: {
        tags: TAGS,
        summary: 'Add a template: as JSON, or from a `.json` or `.zip` file of the account\'s repository',
        body: Type.Union([TemplateInput, FromFile]),
        response: { 201: TemplateFull, ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const { body } = request;
      const file = 'document' in body ? undefined : (body.file ?? body.fileId);
      const input = file === undefined ? (body as TemplateInput) : await solutions.templates.fromFile(request.scope, file);
      const template = await solutions.templates.create(request.scope, input);
      return reply.status(201).send({ ...shownTemplate(template, request.scope.accountId), document: template.document });
    },
  );

  app.get('/solutions/templates/:id', { schema: { tags: TAGS, summary: 'One template with its document', params: IdParams, response: { 200: TemplateFull, ...ERROR_RESPONSES } } }, async (request) => {
    const template = await solutions.templates.get(request.scope, request.params.id);
    return { ...shownTemplate(template, request.scope.accountId), document: template.document };
  });

  app.put(
    '/solutions/templates/:id',
    { bodyLimit: TEMPLATE_MAX_BYTES, schema: { tags: TAGS, summary: "Replace one of the account's own templates", params: IdParams, body: TemplateInput, response: { 200: TemplateFull, ...ERROR_RESPONSES } } },
    async (request) => {
      const template = await solutions.templates.replace(request.scope, request.params.id, request.body);
      return { ...shownTemplate(template, request.scope.accountId), document: template.document };
    },
  );

  app.delete(
    '/solutions/templates/:id',
    { schema: { tags: TAGS, summary: "Delete one of the account's own templates (installations stay)", params: IdParams, response: { 204: Type.Null(), ...ERROR_RESPONSES } } },
    async (request, reply) => {
      await solutions.templates.delete(request.scope, request.params.id);
      return reply.status(204).send(null);
    },
  );

  app.post(
    '/solutions/install',
    {
      schema: {
        tags: TAGS,
        summary: 'Install a template into the acting account or a sub-account; a newer version of an installed one upgrades it',
        description:
          'Applied as an import (the real-time path). An upgrade leaves the items the user edited since the previous version as they are (`kept`) and ' +
          'removes the items the new version no longer has. Triggers listening to `once-event` are sent it once. Recorded in GET /solutions/history.',
        body: Type.Object(
          {
            templateId: Type.String({ minLength: 1, maxLength: 64 }),
            parameters: Type.Optional(Json),
            accountId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'A sub-account the caller may act in; default the acting account' })),
          },
          { additionalProperties: false },
        ),
        response: { 200: InstallResult, ...ERROR_RESPONSES },
      },
    },
    async (request) => solutions.installer.install(request.scope, request.body),
  );

  app.get(
    '/solutions/installations',
    { schema: { tags: TAGS, summary: 'Templates installed in the acting account', querystring: Type.Object(PageQuery), response: { 200: List(InstallationBody), ...ERROR_RESPONSES } } },
    async (request) => {
      const page = await solutions.installations(request.scope, request.query);
      return { ...page, items: page.items.map(shownInstallation) };
    },
  );

  app.get('/solutions/installations/:id', { schema: { tags: TAGS, summary: 'One installation and its items', params: IdParams, response: { 200: InstallationBody, ...ERROR_RESPONSES } } }, async (request) =>
    shownInstallation(await solutions.installation(request.scope, request.params.id)),
  );

  app.delete(
    '/solutions/installations/:id',
    { schema: { tags: TAGS, summary: 'Uninstall: remove the items the installation created and nobody edited', params: IdParams, response: { 200: UninstallResult, ...ERROR_RESPONSES } } },
    async (request) => solutions.installer.uninstall(request.scope, request.params.id),
  );

  app.post(
    '/solutions/uninstall',
    {
      schema: {
        tags: TAGS,
        summary: 'Uninstall (as DELETE /solutions/installations/{id})',
        body: Type.Object({ installationId: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false }),
        response: { 200: UninstallResult, ...ERROR_RESPONSES },
      },
    },
    async (request) => solutions.installer.uninstall(request.scope, request.body.installationId),
  );

  app.get(
    '/solutions/history',
    { schema: { tags: TAGS, summary: "The acting account's installs, upgrades and uninstalls, newest first", querystring: Type.Object(PageQuery), response: { 200: List(HistoryItem), ...ERROR_RESPONSES } } },
    async (request) => solutions.history(request.scope, request.query),
  );
};
