import { useEffect } from 'react';

/** Sets the browser tab's title while the page is shown. */
export function usePageTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · IoT Bridge`;
  }, [title]);
}
