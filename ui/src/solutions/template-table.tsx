import { href } from '../router/hash-location';
import { solutionPath } from '../router/routes';
import type { TemplateSummary } from './solutions-api';

/** The catalogue: name (to its page and install form), version, description, and whose it is. */
export function TemplateTable({ templates }: { readonly templates: readonly TemplateSummary[] }) {
  return (
    <div className="table-scroll">
      <table className="table" aria-label="Templates">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Version</th>
            <th scope="col">Description</th>
            <th scope="col">Origin</th>
            <th scope="col">Parameters</th>
          </tr>
        </thead>
        <tbody>
          {templates.map((template) => (
            <tr key={template.id}>
              <td>
                <a href={href(solutionPath(template.id))}>{template.name}</a>
              </td>
              <td className="mono">{template.version}</td>
              <td>{template.description}</td>
              <td>{template.inherited ? <span className="badge">inherited</span> : 'own'}</td>
              <td>{Object.keys(template.parameters).length}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
