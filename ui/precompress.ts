// Brotli and gzip copies of the built UI's text files, written beside them (`index-abc.js.br`, `.gz`), which the
// service sends to browsers that accept them (src/api/routes/ui.ts, @fastify/static `preCompressed`): the bundle
// is ~1 MB as built and a quarter of that as brotli, made once at build time instead of per request.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import type { Plugin } from 'vite';

const COMPRESSIBLE = /\.(?:js|css|html|svg|json|txt|map)$/;
/** Smaller files gain less than the Content-Encoding costs. */
const MIN_BYTES = 1024;

/** Writes `<file>.br` and `<file>.gz` for each compressible file of `files` (paths relative to `dir`, contents given). */
export function precompress(dir: string, files: ReadonlyMap<string, Uint8Array>): void {
  for (const [name, contents] of files) {
    if (!COMPRESSIBLE.test(name) || contents.byteLength < MIN_BYTES) continue;
    const file = path.join(dir, name);
    writeFileSync(`${file}.br`, brotliCompressSync(contents, { params: { [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY } }));
    writeFileSync(`${file}.gz`, gzipSync(contents, { level: constants.Z_BEST_COMPRESSION }));
  }
}

/** The Vite plugin: after the bundle is written, its text files are compressed beside it. */
export function precompressPlugin(): Plugin {
  return {
    name: 'iotbridge-precompress',
    apply: 'build',
    writeBundle(options, bundle) {
      const files = new Map<string, Uint8Array>();
      for (const [name, output] of Object.entries(bundle)) {
        const contents = output.type === 'chunk' ? output.code : output.source;
        files.set(name, typeof contents === 'string' ? Buffer.from(contents) : contents);
      }
      precompress(options.dir!, files);
    },
  };
}
