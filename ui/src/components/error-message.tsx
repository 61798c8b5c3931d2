/** A failure as the API worded it; announced to screen readers as it appears. */
export function ErrorMessage({ message }: { readonly message: string | undefined }) {
  if (message === undefined) return null;
  return (
    <p className="error-message" role="alert">
      {message}
    </p>
  );
}
