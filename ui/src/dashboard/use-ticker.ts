import { useEffect, useState } from 'react';

/** A number that grows every `ms` while the page is shown (and the tab visible): loads that read it run again. */
export function useTicker(ms: number): number {
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const timer = window.setInterval(() => {
      if (document.visibilityState === 'visible') setTick((value) => value + 1);
    }, ms);
    return () => window.clearInterval(timer);
  }, [ms]);
  return tick;
}
