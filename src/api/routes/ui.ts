import { existsSync } from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';

/**
 * Content-Security-Policy of the web UI: scripts, styles, fonts and API calls from this origin only, nothing
 * inline, no frames, nothing fetched from elsewhere at run time (docs/ui.md).
 */
export const UI_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Vite names every file under assets/ by its content hash: a new build never reuses a name. */
const HASHED_ASSETS = `assets${path.sep}`;
const BROTLI = '.br';
const GZIP = '.gz';

/** The file a compressed copy was made from (`index.html.br` → `index.html`). */
function uncompressedName(file: string): string {
  return file.endsWith(BROTLI) || file.endsWith(GZIP) ? file.slice(0, file.lastIndexOf('.')) : file;
}

const NOT_BUILT_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>IoT Bridge</title></head>
<body><h1>IoT Bridge</h1>
<p>The web UI is not built. Run <code>npm run build</code> (<code>npm start</code> builds it too) and start the service again,
or point <code>IOTBRIDGE_UI_DIR</code> at a built UI.</p>
<p>The API is up: <a href="/docs">/docs</a>, <a href="/openapi.json">/openapi.json</a>.</p></body></html>
`;

function securityHeaders(reply: FastifyReply, html: boolean): void {
  void reply.header('x-content-type-options', 'nosniff');
  if (!html) return;
  void reply.header('content-security-policy', UI_CONTENT_SECURITY_POLICY).header('referrer-policy', 'no-referrer').header('x-frame-options', 'DENY');
}

/**
 * The web UI at `/`: the files of a Vite build in `uiDir`, each its own public route (no wildcard, so a path
 * the API does not know still answers the API's 401/404). Hashed assets are cached for a year, everything else
 * (index.html) is revalidated on each load. Without a build, `/` says how to make one.
 */
export const uiRoutes: FastifyPluginAsync<{ uiDir: string }> = async (app, { uiDir }) => {
  // The UI is static code with no data in it; the API calls it makes carry the token.
  app.addHook('onRoute', (route) => {
    route.config = { ...route.config, public: true };
  });

  if (!existsSync(path.join(uiDir, 'index.html'))) {
    app.get('/', { schema: { hide: true } }, async (_request, reply) => {
      securityHeaders(reply, true);
      return reply.header('cache-control', 'no-cache').type('text/html; charset=utf-8').send(NOT_BUILT_PAGE);
    });
    return;
  }

  await app.register(fastifyStatic, {
    root: uiDir,
    prefix: '/',
    wildcard: false,
    decorateReply: false,
    cacheControl: false,
    // The build's brotli and gzip copies (ui/precompress.ts) go to browsers that accept them, with Vary; they are
    // no routes of their own.
    preCompressed: true,
    globIgnore: [`**/*${BROTLI}`, `**/*${GZIP}`],
    setHeaders(reply, sent) {
      const file = uncompressedName(sent);
      void reply.header('cache-control', path.relative(uiDir, file).startsWith(HASHED_ASSETS) ? 'public, max-age=31536000, immutable' : 'no-cache');
      securityHeaders(reply, file.endsWith('.html'));
    },
  });
};
