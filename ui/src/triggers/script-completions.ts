import type { Completion, CompletionContext, CompletionResult } from '@codemirror/autocomplete';
import { EVENT_FIELDS, type ScriptNamespace } from './trigger-types';

/** The script's own globals besides the namespaces. */
const SCRIPT_GLOBALS: readonly Completion[] = [
  { label: 'event', type: 'variable', info: 'the event the trigger runs on' },
  { label: 'log', type: 'function', info: 'log(...values) adds a line to the execution' },
];

/**
 * Completes `namespace.` with its functions and `event.` with the event's fields (GET /triggers/namespaces
 * tells the functions and their signatures), and a bare word with the namespaces, `event`, `log` and the
 * trigger's global variables. `namespaces` and `globals` are read at each completion: they load or change later.
 */
export function scriptCompletions(namespaces: () => readonly ScriptNamespace[], globals: () => readonly string[]) {
  return (context: CompletionContext): CompletionResult | null => {
    const member = context.matchBefore(/[A-Za-z_$][\w$]*\.[\w$]*$/);
    if (member) {
      const dot = member.text.indexOf('.');
      const owner = member.text.slice(0, dot);
      const from = member.from + dot + 1;
      if (owner === 'event') return { from, options: EVENT_FIELDS.map((field) => ({ label: field.name, type: 'property', info: field.info })), validFor: /^[\w$]*$/ };
      const namespace = namespaces().find((item) => item.name === owner);
      if (!namespace) return null;
      return {
        from,
        options: namespace.functions.map((fn) => ({ label: fn.name, type: 'function', detail: fn.signature === null ? undefined : fn.signature.slice(owner.length + 1 + fn.name.length), info: fn.description ?? undefined })),
        validFor: /^[\w$]*$/,
      };
    }
    const word = context.matchBefore(/[A-Za-z_$][\w$]*$/);
    if (!word && !context.explicit) return null;
    // Not after a dot of something else (`foo.bar`), nor inside a word's middle.
    const from = word?.from ?? context.pos;
    if (from > 0 && context.state.sliceDoc(from - 1, from) === '.') return null;
    return {
      from,
      options: [
        ...namespaces().map((item) => ({ label: item.name, type: 'namespace', info: `${item.functions.length} functions` })),
        ...SCRIPT_GLOBALS,
        ...globals().map((name) => ({ label: name, type: 'variable', info: 'global variable' })),
      ],
      validFor: /^[\w$]*$/,
    };
  };
}
