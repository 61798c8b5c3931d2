/** Shown while a page's first answer is on its way. */
export function Loading({ what }: { readonly what: string }) {
  return (
    <p className="loading" role="status">
      Loading {what}…
    </p>
  );
}
