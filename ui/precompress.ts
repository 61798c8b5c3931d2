// Brotli and gzip copies of the built UI's text files, written beside them (`index-abc.js.br`, `.gz`), which the
// service sends to browsers that accept them (src/api/routes/ui.ts, @fastify/static `preCompressed`): the bundle
// is ~1 MB as built and a quarter of that as brotli, made once at build time instead of per request.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import type { Plugin } from 'vite';

const brotli = promisify(brotliCompress);
const gzipped = promisify(gzip);

const COMPRESSIBLE = /\.(?:js|css|html|svg|json|txt|map)$/;
/** Smaller files gain less than the Content-Encoding costs. */
const MIN_BYTES = 1024;

/**
 * Writes `<file>.br` and `<file>.gz` for each compressible file of `files` (paths relative to `dir`, contents
 * given). The files are compressed at once on libuv's threads: brotli's best quality took ~4 s one after another
 * on two cores, ~2 s at once (the bundle and the countries' map are most of it).
 */
export async function precompress(dir: string, files: ReadonlyMap<string, Uint8Array>): Promise<void> {
  const writes: Promise<void>[] = [];
  for (const [name, contents] of files) {
    if (!COMPRESSIBLE.test(name) || contents.byteLength < MIN_BYTES) continue;
    const file = path.join(dir, name);
    writes.push(brotli(contents, { params: { [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY } }).then((compressed) => writeFile(`${file}.br`, compressed)));
    writes.push(gzipped(contents, { level: constants.Z_BEST_COMPRESSION }).then((compressed) => writeFile(`${file}.gz`, compressed)));
  }
  await Promise.all(writes);
}

/** The Vite plugin: after the bundle is written, its text files are compressed beside it. */
export function precompressPlugin(): Plugin {
  return {
    name: 'iotbridge-precompress',
    apply: 'build',
    async writeBundle(options, bundle) {
      const files = new Map<string, Uint8Array>();
      for (const [name, output] of Object.entries(bundle)) {
        const contents = output.type === 'chunk' ? output.code : output.source;
        files.set(name, typeof contents === 'string' ? Buffer.from(contents) : contents);
      }
      await precompress(options.dir!, files);
    },
  };
}
