import { useEffect, useState } from 'preact/hooks';
import type { NotificationView } from '../../../schemas/notifications.ts';
import { api, explain } from './api.ts';
import { count, time } from './format.ts';
import { go, href, pages, type Place } from './route.ts';

interface Page {
  notifications: NotificationView[];
  next_cursor: string | null;
}

/** The project's notifications, newest first, each with its counts. */
export function NotificationsView({ place }: { place: Place }) {
  const cursor = place.params.get('cursor') ?? undefined;
  const [page, setPage] = useState<Page | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    setError(null);
    api<Page>('GET', '/api/notifications', { limit: 25, cursor })
      .then((p) => live && setPage(p))
      .catch((err: unknown) => live && setError(explain(err)));
    return () => void (live = false);
  }, [cursor]);
  return (
    <section>
      <h1>Notifications</h1>
      {error !== null && <p class="error">{error}</p>}
      {page !== null && page.notifications.length === 0 && <p class="empty">No notification yet.</p>}
      {page !== null && page.notifications.length > 0 && (
        <table class="notifications">
          <thead>
            <tr>
              <th>Created</th>
              <th>Id</th>
              <th>Channel</th>
              <th>Status</th>
              <th>Recipients</th>
              <th>Sent</th>
              <th>Failed</th>
              <th>Skipped</th>
              <th>Delivered</th>
              <th>Opened</th>
              <th>Clicked</th>
            </tr>
          </thead>
          <tbody>
            {page.notifications.map((n) => (
              <tr key={n.id}>
                <td>{time(n.created_at)}</td>
                <td>
                  <a href={href(['notifications', n.id])}>{n.id}</a>
                </td>
                <td>{n.channel}</td>
                <td>
                  <span class={`badge ${n.status}`}>{n.status}</span>
                </td>
                <td>{count(n.recipients)}</td>
                <td>{count(n.counts.sent)}</td>
                <td>{count(n.counts.failed)}</td>
                <td>{count(n.counts.skipped)}</td>
                <td>{count(n.counts.delivered)}</td>
                <td>{count(n.counts.opened)}</td>
                <td>{count(n.counts.clicked)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div class="pager">
        <button
          type="button"
          disabled={cursor === undefined}
          onClick={() => go(href(['notifications'], { cursor: cursor === undefined ? undefined : pages.newer('notifications', cursor) }))}
        >
          ← Newer
        </button>
        <button
          type="button"
          disabled={page?.next_cursor == null}
          onClick={() => {
            const next = page?.next_cursor;
            if (next == null) return;
            pages.older('notifications', cursor, next);
            go(href(['notifications'], { cursor: next }));
          }}
        >
          Older →
        </button>
      </div>
    </section>
  );
}
