import { useRef, useState, type ReactNode } from 'react';
import { messageOf } from '../api/client';
import { ErrorMessage } from './error-message';
import './confirm-button.css';

export interface ConfirmButtonProps {
  /** The button ("Delete"); the confirmation is "Yes, <label lower-cased>". */
  readonly label: string;
  /** Its accessible name when the label alone is ambiguous in a table ("Delete user a@b.c"). */
  readonly name?: string;
  /** What is about to happen, asked before it does ("Delete “x”? Its endpoints stay."). */
  readonly question: ReactNode;
  /** Shown on the button while `onConfirm` runs ("Deleting…"). */
  readonly busyLabel: string;
  /** Does it; a failure's message (the API's) is shown beside the buttons. */
  readonly onConfirm: () => Promise<void>;
}

/**
 * A destructive action in two steps: the button asks, "Yes, …" does it, Cancel or Escape goes back. Focus moves to
 * the confirmation and back to the button, so it works by keyboard.
 */
export function ConfirmButton({ label, name, question, busyLabel, onConfirm }: ConfirmButtonProps) {
  const [step, setStep] = useState<'idle' | 'asking' | 'busy'>('idle');
  const [error, setError] = useState<string | undefined>(undefined);
  const trigger = useRef<HTMLButtonElement>(null);

  const cancel = () => {
    setStep('idle');
    setError(undefined);
    // The trigger is back once React has rendered; focus it there.
    requestAnimationFrame(() => trigger.current?.focus());
  };

  const confirm = async () => {
    setStep('busy');
    setError(undefined);
    try {
      await onConfirm();
      setStep('idle');
    } catch (failure) {
      setError(messageOf(failure));
      setStep('asking');
    }
  };

  if (step === 'idle') {
    return (
      <span className="ask">
        <button ref={trigger} type="button" className="button button-quiet ask-trigger" aria-label={name} onClick={() => setStep('asking')}>
          {label}
        </button>
      </span>
    );
  }
  return (
    <span
      className="ask ask-asking"
      role="group"
      aria-label={name ?? label}
      onKeyDown={(event) => {
        if (event.key === 'Escape') cancel();
      }}
    >
      <span className="ask-question">{question}</span>
      <span className="ask-buttons">
        {/* The user asked for this step, so focus goes to its answer. */}
        <button type="button" className="button ask-yes" autoFocus disabled={step === 'busy'} onClick={() => void confirm()}>
          {step === 'busy' ? busyLabel : `Yes, ${label.toLowerCase()}`}
        </button>
        <button type="button" className="button button-quiet" disabled={step === 'busy'} onClick={cancel}>
          Cancel
        </button>
      </span>
      <ErrorMessage message={error} />
    </span>
  );
}
