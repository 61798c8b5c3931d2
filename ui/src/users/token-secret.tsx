import { useEffect, useId, useRef, useState } from 'react';
import type { IssuedToken } from './token-form';

/**
 * The secret of a token just issued: the only time the API gives it. A copy button, and "Done" forgets it
 * (it is kept in no storage: leaving the page forgets it too).
 */
export function TokenSecret({ token, onDone }: { readonly token: IssuedToken; readonly onDone: () => void }) {
  const id = useId();
  const field = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState<string | undefined>(undefined);

  useEffect(() => {
    field.current?.focus();
    field.current?.select();
  }, []);

  const copy = async () => {
    try {
      await navigator.clipboard.writeText(token.token);
      setCopied('Copied to the clipboard.');
    } catch {
      field.current?.select();
      setCopied('The browser did not allow copying: the token is selected, press Ctrl+C (⌘C).');
    }
  };

  return (
    <div className="card token-secret" role="region" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Token “{token.name}” created</h2>
      <p>Copy the token now: it is not shown again. Send it as <code>Authorization: Bearer &lt;token&gt;</code>.</p>
      <label htmlFor={`${id}-secret`}>Secret of the new token</label>
      <div className="token-secret-row">
        <input id={`${id}-secret`} ref={field} className="mono" readOnly value={token.token} />
        <button type="button" className="button" onClick={() => void copy()}>
          Copy
        </button>
      </div>
      <p className="muted" role="status">
        {copied}
      </p>
      <button type="button" className="button button-quiet" onClick={onDone}>
        Done, hide it
      </button>
    </div>
  );
}
