import { messageOf } from '../api/client';

/** How one item of a batch ended: done, or the API's message. */
export interface ItemFailure<T> {
  readonly item: T;
  readonly message: string;
}

/**
 * Runs `work` on every item, `parallel` at a time, calling `progress` after each; a failure is recorded and the
 * others go on. Returns the failures in the order of the items.
 */
export async function runEach<T>(items: readonly T[], work: (item: T) => Promise<unknown>, progress: (done: number) => void, parallel = 4): Promise<ItemFailure<T>[]> {
  const failures: { index: number; failure: ItemFailure<T> }[] = [];
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      const item = items[index] as T;
      try {
        await work(item);
      } catch (error) {
        failures.push({ index, failure: { item, message: messageOf(error) } });
      }
      done++;
      progress(done);
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, items.length) }, worker));
  return failures.sort((a, b) => a.index - b.index).map((entry) => entry.failure);
}
