import { readdir, readFile } from 'node:fs/promises';
import type { Namespace } from './namespaces/namespace.js';
import type { LocalNamespace } from './namespaces/local/local.js';

/** One function a script can call, as `GET /triggers/namespaces` lists it. */
export interface CatalogFunction {
  readonly name: string;
  /** `endpoint.get(endpoint)`: from the doc comment kept next to the function, null when it has none. */
  readonly signature: string | null;
  /** What the doc comment says after the signature (`→ the endpoint or null.`), null when it has none. */
  readonly description: string | null;
}

export interface CatalogNamespace {
  readonly name: string;
  /** `service`: answered by the service; `sandbox`: pure functions answered inside the script worker; `both` when a namespace has functions of each. */
  readonly runsIn: 'service' | 'sandbox' | 'both';
  readonly functions: CatalogFunction[];
}

interface Doc {
  readonly signature: string | null;
  readonly description: string | null;
}

/**
 * Every namespace and function scripts can call. The names come from the registered namespaces themselves
 * (the engine's, `LOCAL_NAMESPACES`), so the list cannot drift from what runs; signatures and
 * descriptions are read from the `/** ns.fn(args) → … *\/` doc comments next to each function in the
 * namespaces' source (kept in the build: tsc keeps comments).
 */
export function namespaceCatalog(service: readonly Namespace[], local?: Readonly<Record<string, LocalNamespace>>): Promise<CatalogNamespace[]> {
  if (local) return build(service, local);
  let built = cached.get(service);
  // The worker's own namespaces (and the codec libraries they hold, ~0.1 s to load) only when the list is asked for.
  if (!built) cached.set(service, (built = import('./namespaces/local/index.js').then(({ LOCAL_NAMESPACES }) => build(service, LOCAL_NAMESPACES))));
  return built;
}

/** Built once per list of namespaces (one per process). */
const cached = new WeakMap<readonly Namespace[], Promise<CatalogNamespace[]>>();

async function build(service: readonly Namespace[], local: Readonly<Record<string, LocalNamespace>>): Promise<CatalogNamespace[]> {
  const docs = await readDocs();
  const names = new Map<string, { service: Set<string>; local: Set<string> }>();
  const entry = (name: string) => {
    let found = names.get(name);
    if (!found) names.set(name, (found = { service: new Set(), local: new Set() }));
    return found;
  };
  for (const namespace of service) for (const fn of Object.keys(namespace.functions)) entry(namespace.name).service.add(fn);
  for (const [namespace, functions] of Object.entries(local)) for (const fn of Object.keys(functions)) entry(namespace).local.add(fn);
  return [...names.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, fns]) => ({
      name,
      runsIn: fns.service.size === 0 ? 'sandbox' : fns.local.size === 0 ? 'service' : 'both',
      functions: [...new Set([...fns.service, ...fns.local])]
        .sort((a, b) => a.localeCompare(b))
        .map((fn) => ({ name: fn, signature: docs.get(`${name}.${fn}`)?.signature ?? null, description: docs.get(`${name}.${fn}`)?.description ?? null })),
    }));
}

const SOURCE = /\.(?:ts|js)$/;
const NOT_SOURCE = /\.d\.ts$/;

/** The doc comments of the namespaces' source files, by `namespace.function`. */
async function readDocs(): Promise<Map<string, Doc>> {
  const docs = new Map<string, Doc>();
  for (const folder of ['./namespaces/', './namespaces/local/']) {
    const url = new URL(folder, import.meta.url);
    let files: string[];
    try {
      files = await readdir(url);
    } catch {
      continue;
    }
    for (const file of files.sort()) {
      if (!SOURCE.test(file) || NOT_SOURCE.test(file)) continue;
      for (const [key, doc] of docComments(await readFile(new URL(file, url), 'utf8'))) if (!docs.has(key)) docs.set(key, doc);
    }
  }
  return docs;
}

const COMMENT = /\/\*\*([\s\S]*?)\*\//g;
const HEAD = /^([A-Za-z_$][\w$]*)\.([A-Za-z_$][\w$]*)/;

/** `/** ns.fn(args) → what *\/` comments of one source file: the signature up to its closing parenthesis, the rest as description. */
export function docComments(source: string): Map<string, Doc> {
  const found = new Map<string, Doc>();
  for (const match of source.matchAll(COMMENT)) {
    const text = match[1]!
      .split('\n')
      .map((line) => line.replace(/^\s*\*?\s?/, '').trim())
      .filter((line) => line !== '')
      .join(' ');
    const head = HEAD.exec(text);
    if (!head) continue;
    const [, namespace, fn] = head;
    let end = head[0].length;
    if (text[end] === '(') end = closingParenthesis(text, end);
    const signature = text.slice(0, end);
    let description = text.slice(end).trim().replace(/^[:—-]\s*/, '');
    // `endpoint.storeGet / storeSet: the same as …` documents both names.
    const also = /^\/\s*([A-Za-z_$][\w$]*)\s*:\s*/.exec(description);
    if (also) {
      description = description.slice(also[0].length);
      found.set(`${namespace}.${also[1]}`, { signature: `${namespace}.${also[1]}`, description: description || null });
    }
    found.set(`${namespace}.${fn}`, { signature, description: description || null });
  }
  return found;
}

/** The index just past the parenthesis that closes the one at `open` (quotes and nesting respected). */
function closingParenthesis(text: string, open: number): number {
  let depth = 0;
  let quote: string | undefined;
  for (let i = open; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'" || c === '`') quote = c;
    else if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return i + 1;
  }
  return text.length;
}
