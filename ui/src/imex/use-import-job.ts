import { useEffect, useState } from 'react';
import { messageOf, type ApiClient } from '../api/client';
import { loadJob, type ImportJob } from './imex-api';

/** How often a running job is asked for its progress. */
const POLL_EVERY_MS = 1000;

export interface ImportJobState {
  /** The last answer about the job, undefined before an import starts. */
  readonly job: ImportJob | undefined;
  /** Why following the job stopped (the API's message). */
  readonly error: string | undefined;
  /** Shows a job just started; a running one is then followed until it ends. */
  readonly follow: (job: ImportJob | undefined) => void;
}

/** Follows an import job: `GET /imex/jobs/{id}` every second while it is `running`, then keeps its end. */
export function useImportJob(api: ApiClient): ImportJobState {
  const [job, setJob] = useState<ImportJob | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);

  useEffect(() => {
    if (job?.state !== 'running') return;
    let current = true;
    // One request at a time: the next is asked a second after the previous answer (a new `job` reruns this).
    const timer = window.setTimeout(() => {
      loadJob(api, job.jobId).then(
        (next) => {
          if (current) setJob(next);
        },
        (failure: unknown) => {
          if (current) setError(messageOf(failure));
        },
      );
    }, POLL_EVERY_MS);
    return () => {
      current = false;
      window.clearTimeout(timer);
    };
  }, [api, job]);

  return {
    job,
    error,
    follow: (next) => {
      setError(undefined);
      setJob(next);
    },
  };
}
