import { bytes, count, type DevicesView, type StorageView } from './diagnostics-types';

/** Per node: its device listeners with their ports and connected endpoints per protocol; suspended accounts. */
export function DevicesCard({ view }: { readonly view: DevicesView }) {
  return (
    <>
      <ul className="stats super-stats" aria-label="Devices">
        <li className="stat">
          <span className="stat-value">{count(view.nodes.reduce((sum, node) => sum + node.connected.reduce((total, item) => total + item.count, 0), 0))}</span>
          <span className="stat-label">connected endpoints</span>
        </li>
        <li className="stat">
          <span className="stat-value">{count(view.suspendedAccounts)}</span>
          <span className="stat-label">suspended accounts</span>
        </li>
      </ul>
      {view.nodes.map((node) => (
        <div key={node.nodeId} className="super-node">
          <h4 className="mono">{node.nodeId}</h4>
          <p className="muted">
            Listening:{' '}
            {Object.keys(node.servers).length === 0
              ? 'no device listeners'
              : Object.entries(node.servers)
                  .map(([name, port]) => `${name} ${port}`)
                  .join(', ')}
          </p>
          <div className="table-scroll">
            <table className="table table-compact" aria-label={`Connected on ${node.nodeId}`}>
              <thead>
                <tr>
                  <th scope="col">Protocol</th>
                  <th scope="col">Connected</th>
                </tr>
              </thead>
              <tbody>
                {node.connected.length === 0 ? (
                  <tr>
                    <td colSpan={2} className="muted">
                      No device connected.
                    </td>
                  </tr>
                ) : (
                  node.connected.map((item) => (
                    <tr key={item.protocol}>
                      <td>{item.protocol}</td>
                      <td>{count(item.count)}</td>
                    </tr>
                  ))
                )}
              </tbody>
            </table>
          </div>
        </div>
      ))}
    </>
  );
}

/** Table sizes (estimated where counting would be dear) and the retention in force. */
export function StorageCard({ view }: { readonly view: StorageView }) {
  const tables = [...view.tables].sort((a, b) => (b.bytes ?? b.rows ?? 0) - (a.bytes ?? a.rows ?? 0));
  return (
    <>
      <p className="muted">
        {view.dialect === 'postgres' ? 'PostgreSQL' : view.dialect === 'sqlite' ? 'SQLite' : view.dialect}. Kept: history {view.retention.historyDays} days, executions{' '}
        {view.retention.executionDays} days, logs {view.retention.logDays} days.
      </p>
      <div className="table-scroll super-storage">
        <table className="table table-compact" aria-label="Table sizes">
          <thead>
            <tr>
              <th scope="col">Table</th>
              <th scope="col">Rows</th>
              <th scope="col">Size</th>
            </tr>
          </thead>
          <tbody>
            {tables.map((table) => (
              <tr key={table.table}>
                <td className="mono">{table.table}</td>
                <td>
                  {table.estimated && table.rows !== null ? '≈ ' : ''}
                  {count(table.rows)}
                </td>
                <td>{bytes(table.bytes)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
