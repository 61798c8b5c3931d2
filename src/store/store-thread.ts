import { Worker } from 'node:worker_threads';

/**
 * Starts a worker thread running the module at `moduleUrl` (which is then also the thread's code, started by its
 * `workerData`). From source (tests, `npm run dev`) the module is TypeScript: a worker thread gets no loader from
 * `--import tsx` on Node 20, so it registers tsx itself first.
 */
export function startModuleThread(moduleUrl: string, workerData: unknown): Worker {
  return moduleUrl.endsWith('.ts')
    ? new Worker(`import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((tsx) => tsx.register()).then(() => import(${JSON.stringify(moduleUrl)}))`, { eval: true, workerData })
    : new Worker(new URL(moduleUrl), { workerData });
}
