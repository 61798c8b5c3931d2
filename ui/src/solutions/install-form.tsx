import { useState, type FormEvent } from 'react';
import { call } from '../api/client';
import { useAction } from '../api/use-action';
import { ErrorMessage } from '../components/error-message';
import { useSession } from '../session/session';
import { ParameterFields } from './parameter-fields';
import { initialTexts, valuesOf } from './parameter-values';
import type { Installation, InstallResult, Template } from './solutions-api';

export interface InstallFormProps {
  readonly template: Template;
  /** The installation an upgrade replaces: its values fill the form. */
  readonly upgrading: Installation | undefined;
  readonly onDone: (result: InstallResult) => void;
}

/** The template's parameters as a form and **Install** (or **Upgrade**): `POST /solutions/install`. */
export function InstallForm({ template, upgrading, onDone }: InstallFormProps) {
  const { api } = useSession();
  const { busy, error, setError, run } = useAction();
  const [texts, setTexts] = useState(() => initialTexts(template.parameters, upgrading?.parameters));

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const parsed = valuesOf(template.parameters, texts);
    if ('problem' in parsed) {
      setError(parsed.problem);
      return;
    }
    const result = await run(() => call(api.POST('/solutions/install', { body: { templateId: template.id, parameters: parsed.values } })));
    if (result !== undefined) onDone(result);
  };

  const label = upgrading === undefined ? 'Install' : `Upgrade from ${upgrading.version}`;
  return (
    <form className="card form sol-install" aria-label={`${label} ${template.name}`} onSubmit={(event) => void submit(event)}>
      <h2>{upgrading === undefined ? 'Install' : 'Upgrade'}</h2>
      {upgrading === undefined ? null : (
        <p className="muted">
          Filled with the values of the installed version {upgrading.version}. Items edited since then are kept as they are.
        </p>
      )}
      <ParameterFields parameters={template.parameters} texts={texts} onChange={setTexts} />
      <ErrorMessage message={error} />
      <button type="submit" className="button" disabled={busy}>
        {busy ? 'Installing…' : label}
      </button>
    </form>
  );
}
