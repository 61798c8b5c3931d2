/** The entries of a JSON object (status details, parameters) as name / value rows; nested values as JSON. */
export function JsonTable({ value, caption }: { readonly value: Readonly<Record<string, unknown>>; readonly caption: string }) {
  const entries = Object.entries(value).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) return <p className="muted">No {caption.toLowerCase()}.</p>;
  return (
    <div className="table-scroll">
      <table className="table table-compact">
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Value</th>
          </tr>
        </thead>
        <tbody>
          {entries.map(([name, item]) => (
            <tr key={name}>
              <th scope="row" className="mono">
                {name}
              </th>
              <td className="mono">{typeof item === 'string' ? item : JSON.stringify(item)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
