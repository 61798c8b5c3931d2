import { DateTime } from '../components/date-time';
import { href } from '../router/hash-location';
import { endpointPath, triggerPath } from '../router/routes';
import type { LogEntry, LogLevel } from './log-query';

/** A level as a coloured chip: error, warn, info, debug. */
export function LevelBadge({ level }: { readonly level: LogLevel }) {
  return <span className={`log-level log-level-${level}`}>{level}</span>;
}

/**
 * One row per entry, newest first: time, level, source, endpoint (to its page), trigger (to its editor, by name
 * when it is among those loaded) and the message, wrapped, its line breaks kept.
 */
export function LogTable({ entries, triggerNames }: { readonly entries: readonly LogEntry[]; readonly triggerNames: ReadonlyMap<string, string> }) {
  return (
    <div className="table-scroll">
      <table className="table table-compact log-table" aria-label="Log entries">
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Level</th>
            <th scope="col">Source</th>
            <th scope="col">Endpoint</th>
            <th scope="col">Trigger</th>
            <th scope="col">Message</th>
          </tr>
        </thead>
        <tbody>
          {entries.map((entry) => (
            <tr key={entry.id}>
              <td className="nowrap">
                <DateTime value={entry.time} />
              </td>
              <td>
                <LevelBadge level={entry.level} />
              </td>
              <td className="mono">{entry.source}</td>
              <td className="mono log-ref">
                {entry.endpointId === null ? (
                  (entry.endpointKey ?? <span className="muted">none</span>)
                ) : (
                  <a href={href(endpointPath(entry.endpointId))}>{entry.endpointKey ?? entry.endpointId}</a>
                )}
              </td>
              <td className="log-ref log-trigger">
                {entry.triggerId === null ? (
                  <span className="muted">none</span>
                ) : (
                  <a href={href(triggerPath(entry.triggerId))}>{triggerNames.get(entry.triggerId) ?? <span className="mono">{entry.triggerId}</span>}</a>
                )}
              </td>
              <td className="log-message">{entry.message}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
