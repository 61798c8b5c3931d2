import { usePageTitle } from '../components/page-title';
import { href } from './hash-location';

export function NotFoundPage({ path }: { readonly path: string }) {
  usePageTitle('Not found');
  return (
    <section aria-labelledby="not-found-title">
      <h1 id="not-found-title">No such page</h1>
      <p>
        There is no page at <code>{path}</code>. <a href={href('/')}>Go to the dashboard</a>.
      </p>
    </section>
  );
}
