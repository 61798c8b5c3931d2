import { useEffect, useState } from 'react';
import { ApiError, messageOf } from './client';

export interface Resource<T> {
  /** The last data loaded; kept while a newer load runs so the page does not flicker, gone after a failure. */
  readonly data: T | undefined;
  /** The API's message when the last load failed. */
  readonly error: string | undefined;
  /** The HTTP status of that failure (0: the service could not be reached). */
  readonly status: number | undefined;
  /** A load for the current `load` function is under way. */
  readonly loading: boolean;
  /** Loads again (after a change this page made). */
  readonly reload: () => void;
}

interface Loaded<T> {
  readonly load: () => Promise<T>;
  readonly round: number;
  readonly data: T | undefined;
  readonly error: string | undefined;
  readonly status: number | undefined;
}

/**
 * Runs `load` and keeps its result; runs it again whenever `load` changes (make it with `useCallback` over what
 * it reads) or `reload` is called. An answer to an older load is dropped.
 */
export function useResource<T>(load: () => Promise<T>): Resource<T> {
  const [round, setRound] = useState(0);
  const [loaded, setLoaded] = useState<Loaded<T> | undefined>(undefined);

  useEffect(() => {
    let current = true;
    load().then(
      (data) => {
        if (current) setLoaded({ load, round, data, error: undefined, status: undefined });
      },
      (error: unknown) => {
        if (current) setLoaded({ load, round, data: undefined, error: messageOf(error), status: error instanceof ApiError ? error.status : undefined });
      },
    );
    return () => {
      current = false;
    };
  }, [load, round]);

  return {
    data: loaded?.data,
    error: loaded?.error,
    status: loaded?.status,
    loading: loaded?.load !== load || loaded.round !== round,
    reload: () => setRound((value) => value + 1),
  };
}
