import { href } from '../router/hash-location';

interface NavItem {
  readonly path: string;
  readonly label: string;
}

/** Every section of the UI. */
export const NAV_ITEMS: readonly NavItem[] = [
  { path: '/', label: 'Dashboard' },
  { path: '/endpoints', label: 'Endpoints' },
  { path: '/services', label: 'Services' },
  { path: '/triggers', label: 'Triggers' },
  { path: '/history', label: 'History' },
  { path: '/files', label: 'Files' },
  { path: '/fota', label: 'FOTA' },
  { path: '/map', label: 'Map' },
  { path: '/location', label: 'Location' },
  { path: '/reports', label: 'Reports' },
  { path: '/alerts', label: 'Alerts' },
  { path: '/logs', label: 'Logs' },
  { path: '/health', label: 'Health' },
  { path: '/users', label: 'Users & tokens' },
  { path: '/imex', label: 'Import / export' },
  { path: '/solutions', label: 'Solutions' },
];

/** The platform administrators' area, shown to Super-Admin users only. */
const SUPER_ITEM: NavItem = { path: '/super', label: 'Super-Admin' };
/** The installation's licence: its state and installing one are the Super-Admin's. */
const LICENCE_ITEM: NavItem = { path: '/licence', label: 'Licence' };

function isCurrent(item: NavItem, path: string): boolean {
  return item.path === '/' ? path === '/' : path === item.path || path.startsWith(`${item.path}/`);
}

export function Navigation({ path, superAdmin }: { readonly path: string; readonly superAdmin: boolean }) {
  const items = superAdmin ? [...NAV_ITEMS, SUPER_ITEM, LICENCE_ITEM] : NAV_ITEMS;
  return (
    <nav className="navigation" aria-label="Sections">
      <ul>
        {items.map((item) => (
          <li key={item.path}>
            <a href={href(item.path)} aria-current={isCurrent(item, path) ? 'page' : undefined}>
              {item.label}
            </a>
          </li>
        ))}
      </ul>
    </nav>
  );
}
