// Issue 22's seams: dependencies point down (domain ← store ← protocols ← api/app). A device server that imports
// device-server.ts while device-server.ts imports it back makes the protocols one lump; store code outside
// src/store/ means a protocol picks its own storage. Both are checked here on the source text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const SRC = path.resolve('src');
const HUB = path.join(SRC, 'devices', 'device-server.ts');
const STORE = path.join(SRC, 'store');
/** Kysely query building: what only src/store/ (its migrations included) may do. */
const QUERY_BUILDING = /\b(selectFrom|insertInto|updateTable|deleteFrom)\(/;
/**
 * `import … from`, `import type … from`, `export … from`, `export type … from` and bare `import '…'`, at the start
 * of a line (so not in comments); the clause holds names, braces, commas, `*` and `as` only.
 */
const SPECIFIERS = /^(?:import|export)\s+(?:[\w$*{},\s]+?\s+from\s+)?['"]([^'"]+)['"]/gm;

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return tsFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

type Graph = Map<string, string[]>;

/** Each file's relative imports resolved to files (`./x.js` is `./x.ts`); what does not resolve is returned apart. */
function importGraph(files: readonly string[]): { graph: Graph; unresolved: string[] } {
  const graph: Graph = new Map();
  const unresolved: string[] = [];
  for (const file of files) {
    const targets = new Set<string>();
    for (const match of readFileSync(file, 'utf8').matchAll(SPECIFIERS)) {
      const specifier = match[1]!;
      if (!specifier.startsWith('.')) continue;
      if (specifier.endsWith('.json')) continue;
      const target = path.resolve(path.dirname(file), specifier.replace(/\.js$/, '.ts'));
      if (existsSync(target)) targets.add(target);
      else unresolved.push(`${rel(file)}: ${specifier}`);
    }
    graph.set(file, [...targets].sort());
  }
  return { graph, unresolved };
}

/** One cycle per back edge of a depth-first walk (files and imports in sorted order), each listed once. */
function cycles(graph: Graph): string[][] {
  const found = new Map<string, string[]>();
  const done = new Set<string>();
  const onStack = new Map<string, number>();
  const stack: string[] = [];
  const visit = (file: string): void => {
    onStack.set(file, stack.length);
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      const at = onStack.get(next);
      if (at !== undefined) {
        const cycle = stack.slice(at);
        // The same cycle entered elsewhere: listed from its smallest file.
        const start = cycle.indexOf([...cycle].sort()[0]!);
        const normal = [...cycle.slice(start), ...cycle.slice(0, start)];
        found.set(normal.join(' → '), normal);
      } else if (!done.has(next)) {
        visit(next);
      }
    }
    stack.pop();
    onStack.delete(file);
    done.add(file);
  };
  for (const file of [...graph.keys()].sort()) if (!done.has(file)) visit(file);
  return [...found.values()];
}

/** A path of imports from `from` back to `from`, or undefined: exact, whatever order a walk takes. */
function cycleThrough(graph: Graph, from: string): string[] | undefined {
  const seen = new Set<string>();
  const walk = (file: string, trail: string[]): string[] | undefined => {
    for (const next of graph.get(file) ?? []) {
      if (next === from) return [...trail, next];
      if (seen.has(next)) continue;
      seen.add(next);
      const found = walk(next, [...trail, next]);
      if (found) return found;
    }
    return undefined;
  };
  return walk(from, [from]);
}

function rel(file: string): string {
  return path.relative(process.cwd(), file);
}

const files = tsFiles(SRC).sort();
const { graph, unresolved } = importGraph(files);

test('every relative import of src/ resolves to a file (the graph below is complete)', () => {
  assert.ok(files.length > 100, `only ${files.length} files found under src/`);
  assert.deepEqual(unresolved, []);
});

test('no import cycle passes through src/devices/device-server.ts', () => {
  const cycle = cycleThrough(graph, HUB);
  assert.equal(cycle, undefined, `device-server.ts is on an import cycle: ${cycle?.map(rel).join(' → ')}`);
});

test('no Kysely query building outside src/store/', () => {
  const outside = files.filter((file) => !file.startsWith(STORE + path.sep) && QUERY_BUILDING.test(readFileSync(file, 'utf8')));
  assert.deepEqual(outside.map(rel), [], 'store code (selectFrom, insertInto, updateTable, deleteFrom) belongs in src/store/');
});

test('other import cycles are listed (not yet an error)', () => {
  const others = cycles(graph).filter((cycle) => !cycle.includes(HUB));
  console.log(`${others.length} other import cycle(s) in src/`);
  for (const cycle of others) console.log(`  ${[...cycle, cycle[0]!].map(rel).join(' → ')}`);
  // The walk itself must see a cycle where there is one.
  assert.ok(cycles(new Map([['a', ['b']], ['b', ['a']]])).length === 1);
});
