import { useEffect, useState } from 'preact/hooks';
import type { MessageDelivery } from '../../../schemas/queries.ts';
import { api, explain } from './api.ts';
import { Charts } from './charts.tsx';
import { DeliveryTable } from './delivery-table.tsx';
import { FilterBar, filtersOf, type Filters } from './filters.tsx';
import { go, href, pages, type Place } from './route.ts';

const PAGE = 50;

interface Page {
  deliveries: MessageDelivery[];
  next_cursor: string | null;
}

/**
 * The deliveries table with every filter of GET /api/deliveries, kept in the URL with the page's
 * cursor, so a link opens the same page. Pages follow `next_cursor` (never repeats nor skips).
 */
export function DeliveriesView({ place }: { place: Place }) {
  const filters = filtersOf(place.params);
  const cursor = place.params.get('cursor') ?? undefined;
  const [page, setPage] = useState<Page | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const key = JSON.stringify([filters, cursor]);
  // The charts wait for the table of these very filters: on a change, this render still holds the last one.
  const [loadedKey, setLoadedKey] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    setLoading(true);
    setError(null);
    api<Page>('GET', '/api/deliveries', { ...filters, limit: PAGE, cursor })
      .then((p) => live && (setPage(p), setLoadedKey(key), setLoading(false)))
      .catch((err: unknown) => live && (setError(explain(err)), setLoading(false)));
    return () => void (live = false);
  }, [key]);
  const open = (f: Filters, c?: string): void => go(href(['deliveries'], { ...f, cursor: c }));
  const listing = `deliveries${JSON.stringify(filters)}`;
  const older = (next: string): void => {
    pages.older(listing, cursor, next);
    open(filters, next);
  };
  return (
    <section>
      <h1>Deliveries</h1>
      <FilterBar filters={filters} onChange={(f) => open(f)} />
      <Charts filters={filters} ready={!loading && loadedKey === key} />
      <div class="pager">
        <button type="button" disabled={cursor === undefined} onClick={() => open(filters, cursor === undefined ? undefined : pages.newer(listing, cursor))}>
          ← Newer
        </button>
        <button type="button" disabled={cursor === undefined} onClick={() => open(filters)}>
          First page
        </button>
        <span class="status" aria-live="polite">
          {loading ? 'Loading…' : page === null ? '' : `${page.deliveries.length} shown`}
        </span>
        <button type="button" disabled={loading || page?.next_cursor == null} onClick={() => page?.next_cursor != null && older(page.next_cursor)}>
          Older →
        </button>
      </div>
      {error !== null && <p class="error">{error}</p>}
      {page !== null && <DeliveryTable rows={page.deliveries} />}
    </section>
  );
}
