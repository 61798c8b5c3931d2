// A test reporter that names the failed tests once more at the end of `npm test`, each with its file, the suites
// it is in and the first lines of its error: CI keeps only the end of a long log, and a failure reported in the
// middle of 2,500 tests was lost there. Tests that failed only because a subtest did are not repeated.
const MESSAGE_LINES = 8;

export default async function* failuresAtTheEnd(source) {
  /** Per file, the names of the tests started at each nesting level: the suites a failure is in. */
  const started = new Map();
  const failed = [];
  for await (const event of source) {
    const { name, nesting, file } = event.data ?? {};
    if (event.type === 'test:start') {
      const path = started.get(file) ?? [];
      path.length = nesting;
      path.push(name);
      started.set(file, path);
      continue;
    }
    if (event.type !== 'test:fail') continue;
    const error = event.data.details?.error;
    if (error?.failureType === 'subtestsFailed') continue;
    const suites = (started.get(file) ?? []).slice(0, nesting);
    const where = file ? `${file}${event.data.line ? `:${event.data.line}` : ''}` : '(no file)';
    const message = String(error?.cause?.message ?? error?.message ?? 'failed').trim().split('\n').slice(0, MESSAGE_LINES);
    failed.push({ title: [...suites, name].join(' › '), where, message });
  }
  if (failed.length === 0) return;
  yield `\n# ${failed.length} failed (repeated from above):\n`;
  for (const { title, where, message } of failed) {
    yield `# ✖ ${title}\n#   ${where}\n${message.map((line) => `#     ${line}\n`).join('')}`;
  }
}
