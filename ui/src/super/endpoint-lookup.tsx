import { useId, useState, type FormEvent } from 'react';
import { call, type ApiData } from '../api/client';
import { useAction } from '../api/use-action';
import { DateTime } from '../components/date-time';
import { ErrorMessage } from '../components/error-message';
import { StateBadge } from '../components/state-badge';
import { useSession } from '../session/session';

type Found = ApiData<'/super/endpoints'>['items'];

/** "Which customer has device X?": `GET /super/endpoints?key=` over every account, with the account it is in. */
export function EndpointLookup() {
  const id = useId();
  const { api } = useSession();
  const { busy, error, setError, run } = useAction();
  const [key, setKey] = useState('');
  const [found, setFound] = useState<{ key: string; items: Found } | undefined>(undefined);

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const wanted = key.trim();
    if (wanted === '') {
      setError('Type an endpoint key.');
      return;
    }
    const answer = await run(() => call(api.GET('/super/endpoints', { params: { query: { key: wanted } } })));
    setFound(answer === undefined ? undefined : { key: wanted, items: answer.items });
  };

  return (
    <div className="card super-card" role="region" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Find endpoint by key</h2>
      <form className="super-lookup" role="search" aria-label="Find endpoint by key" onSubmit={(event) => void submit(event)}>
        <label htmlFor={`${id}-key`} className="visually-hidden">
          Endpoint key
        </label>
        <input id={`${id}-key`} className="mono" placeholder="endpoint key, any account" value={key} onChange={(event) => setKey(event.target.value)} />
        <button type="submit" className="button" disabled={busy}>
          {busy ? 'Finding…' : 'Find'}
        </button>
      </form>
      <ErrorMessage message={error} />
      {found === undefined ? null : found.items.length === 0 ? (
        <p className="muted" role="status">
          No endpoint has the key <span className="mono">{found.key}</span>.
        </p>
      ) : (
        <ul className="super-found" aria-label="Endpoints found">
          {found.items.map((item) => (
            <li key={item.id}>
              <span className="mono">{item.key}</span> <StateBadge state={item.state} />
              <br />
              in <strong>{item.accountName}</strong> <span className="mono muted">{item.accountId}</span>
              <br />
              <span className="muted">
                service {item.serviceName} ({item.serviceType}), last seen <DateTime value={item.lastSeen} />
              </span>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
