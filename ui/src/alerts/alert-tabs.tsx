import { href } from '../router/hash-location';
import { ALERT_RULES_PATH } from '../router/routes';

/** Alerts | Rules: the two pages of the section. */
export function AlertTabs({ current }: { readonly current: 'alerts' | 'rules' }) {
  return (
    <nav className="alt-tabs" aria-label="Alerts and rules">
      <a href={href('/alerts')} aria-current={current === 'alerts' ? 'page' : undefined}>
        Alerts
      </a>
      <a href={href(ALERT_RULES_PATH)} aria-current={current === 'rules' ? 'page' : undefined}>
        Rules
      </a>
    </nav>
  );
}
