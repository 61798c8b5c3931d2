import { useCallback, useState } from 'react';
import { messageOf } from './client';

export interface Action {
  /** An action is under way (its buttons are disabled). */
  readonly busy: boolean;
  /** The API's message when the last action failed. */
  readonly error: string | undefined;
  readonly setError: (message: string | undefined) => void;
  /** Runs `work` with `busy` set and the last error cleared; a failure becomes `error` and the result undefined. */
  readonly run: <T>(work: () => Promise<T>) => Promise<T | undefined>;
}

/** What every form that calls the API does around its call: busy while it runs, the API's message when it fails. */
export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  const run = useCallback(async <T,>(work: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setError(undefined);
    try {
      return await work();
    } catch (failure) {
      setError(messageOf(failure));
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, setError, run };
}
