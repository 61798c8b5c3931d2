import { autocompletion, closeBrackets, closeBracketsKeymap, completionKeymap } from '@codemirror/autocomplete';
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { javascript, javascriptLanguage } from '@codemirror/lang-javascript';
import { bracketMatching, defaultHighlightStyle, indentOnInput, syntaxHighlighting } from '@codemirror/language';
import { EditorState } from '@codemirror/state';
import { drawSelection, EditorView, highlightActiveLine, highlightActiveLineGutter, keymap, lineNumbers } from '@codemirror/view';
import { useEffect, useRef } from 'react';
import { scriptCompletions } from './script-completions';
import type { ScriptNamespace } from './trigger-types';

export interface ScriptEditorProps {
  /** The script the editor starts with (later changes of this prop are not applied: remount with a key). */
  readonly initial: string;
  readonly onChange: (script: string) => void;
  readonly namespaces: readonly ScriptNamespace[];
  readonly globals: readonly string[];
  /** The editor's accessible name (a label element outside its shadow root cannot name it). */
  readonly label: string;
  /** The text of the hint the editor is described by. */
  readonly description?: string;
}

/** The editor's look: CodeMirror's styles live in its shadow root, where the page's CSS does not reach. */
const theme = EditorView.theme({
  '&': { minHeight: '14rem', maxHeight: '32rem', fontSize: '0.9rem', backgroundColor: 'var(--surface, #fff)', borderRadius: 'var(--radius, 6px)' },
  '.cm-scroller': { fontFamily: "var(--mono, ui-monospace, 'SFMono-Regular', Menlo, Consolas, 'Liberation Mono', monospace)", overflow: 'auto' },
  '&.cm-focused': { outline: '3px solid var(--focus, #f0a202)', outlineOffset: '2px' },
  '.cm-gutters': { backgroundColor: 'var(--bg, #f4f6f9)', color: 'var(--muted, #5b6675)', borderRight: '1px solid var(--border, #d8dee6)' },
  '.cm-tooltip-autocomplete ul li[aria-selected]': { backgroundColor: 'var(--accent, #1f4e79)', color: '#fff' },
  '.cm-completionDetail': { fontStyle: 'normal', opacity: '0.8' },
});

/**
 * The script in CodeMirror 6: JavaScript highlighting, completions of the namespaces and `event.`. Tab
 * indents; Escape then Tab moves focus on (CodeMirror's way out of a Tab-handling editor).
 *
 * The page's CSP (`style-src 'self'`) refuses the `<style>` element CodeMirror adds to a document, but not
 * a constructed style sheet, which is what it uses inside a shadow root: so the editor lives in one.
 */
export function ScriptEditor({ initial, onChange, namespaces, globals, label, description }: ScriptEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  // Read by the editor's callbacks, which outlive a render.
  const latest = useRef({ onChange, namespaces, globals });
  useEffect(() => {
    latest.current = { onChange, namespaces, globals };
  }, [onChange, namespaces, globals]);

  useEffect(() => {
    const element = host.current;
    if (element === null) return;
    const root = element.shadowRoot ?? element.attachShadow({ mode: 'open' });
    const view = new EditorView({
      root,
      parent: root,
      state: EditorState.create({
        doc: initial,
        extensions: [
          lineNumbers(),
          highlightActiveLineGutter(),
          history(),
          drawSelection(),
          indentOnInput(),
          bracketMatching(),
          closeBrackets(),
          highlightActiveLine(),
          syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
          javascript(),
          javascriptLanguage.data.of({ autocomplete: scriptCompletions(() => latest.current.namespaces, () => latest.current.globals) }),
          autocompletion({ activateOnTyping: true }),
          keymap.of([...closeBracketsKeymap, ...defaultKeymap, ...historyKeymap, ...completionKeymap, indentWithTab]),
          theme,
          EditorView.contentAttributes.of({ 'aria-label': label, ...(description === undefined ? {} : { 'aria-description': description }), spellcheck: 'false' }),
          EditorView.updateListener.of((update) => {
            if (update.docChanged) latest.current.onChange(update.state.doc.toString());
          }),
        ],
      }),
    });
    return () => view.destroy();
    // The editor is made once: its document is its own state from then on.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  return <div ref={host} className="trg-script-editor" />;
}
