import { href } from '../router/hash-location';

/** Accounts | Diagnostics: the two views of the Super-Admin page. */
export function SuperTabs({ current }: { readonly current: 'accounts' | 'diagnostics' }) {
  return (
    <nav className="super-tabs" aria-label="Super-Admin views">
      <a href={href('/super')} aria-current={current === 'accounts' ? 'page' : undefined}>
        Accounts
      </a>
      <a href={href('/super', { view: 'diagnostics' })} aria-current={current === 'diagnostics' ? 'page' : undefined}>
        Diagnostics
      </a>
    </nav>
  );
}
