/** Tags as chips; with `hrefFor`, each links to the list filtered by it. */
export function TagList({ tags, hrefFor }: { readonly tags: readonly string[]; readonly hrefFor?: (tag: string) => string }) {
  if (tags.length === 0) return <span className="muted">none</span>;
  return (
    <ul className="tag-list">
      {tags.map((tag) => (
        <li key={tag}>
          {hrefFor === undefined ? (
            <span className="tag">{tag}</span>
          ) : (
            <a className="tag" href={hrefFor(tag)} title={`Endpoints tagged ${tag}`}>
              {tag}
            </a>
          )}
        </li>
      ))}
    </ul>
  );
}
