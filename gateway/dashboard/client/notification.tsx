import { useEffect, useState } from 'preact/hooks';
import type { MessageDelivery } from '../../../schemas/queries.ts';
import type { NotificationView } from '../../../schemas/notifications.ts';
import { api, ApiError, explain } from './api.ts';
import { DeliveryTable } from './delivery-table.tsx';
import { count, time } from './format.ts';
import { href } from './route.ts';

const POLL_MS = 1000;
const COUNTERS = ['sent', 'failed', 'skipped', 'delivered', 'opened', 'clicked'] as const;

/** A notification still moving: its counts are read again every second. */
const moving = (n: NotificationView): boolean => n.status === 'queued' || n.status === 'sending' || n.status === 'scheduled';

/**
 * One notification: its counts moving while it sends, a cancel that asks first, and its latest
 * delivery records.
 */
export function NotificationDetail({ id }: { id: string }) {
  const [n, setN] = useState<NotificationView | null>(null);
  const [recent, setRecent] = useState<MessageDelivery[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [asking, setAsking] = useState(false);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    const again = (): void => void setTimeout(() => live && setTick((t) => t + 1), POLL_MS);
    const load = async (): Promise<void> => {
      try {
        const [view, page] = await Promise.all([
          api<NotificationView>('GET', `/api/notifications/${encodeURIComponent(id)}`),
          api<{ deliveries: MessageDelivery[] }>('GET', '/api/deliveries', { notification_id: id, limit: 20 }),
        ]);
        if (!live) return;
        setN(view);
        setRecent(page.deliveries);
        setError(null);
        if (moving(view)) again();
      } catch (err) {
        if (!live) return;
        setError(explain(err));
        // A failed read (a slow dependency, a lost connection) is tried again; an unknown id is not.
        if (!(err instanceof ApiError && err.status === 404)) again();
      }
    };
    void load();
    return () => void (live = false);
  }, [id, tick]);
  const cancel = async (): Promise<void> => {
    setAsking(false);
    try {
      await api('DELETE', `/api/notifications/${encodeURIComponent(id)}`);
      setTick((t) => t + 1);
    } catch (err) {
      setError(explain(err));
    }
  };
  if (n === null) return <section>{error === null ? <p>Loading…</p> : <p class="error">{error}</p>}</section>;
  const done = n.counts.sent + n.counts.failed + n.counts.skipped;
  const share = n.recipients === 0 ? 0 : Math.min(1, done / n.recipients);
  return (
    <section>
      <h1>
        Notification <code>{n.id}</code>
      </h1>
      {error !== null && <p class="error">{error}</p>}
      <dl class="facts">
        <dt>Status</dt>
        <dd>
          <span class={`badge ${n.status}`} data-testid="notification-status">
            {n.status}
          </span>
        </dd>
        <dt>Channel</dt>
        <dd>{n.channel}</dd>
        <dt>Created</dt>
        <dd>{time(n.created_at)}</dd>
        <dt>Send after</dt>
        <dd>{time(n.send_after)}</dd>
        <dt>Completed</dt>
        <dd>{time(n.completed_at)}</dd>
      </dl>
      <div class="progress" title={`${done} of ${n.recipients}`}>
        <div style={{ width: `${(share * 100).toFixed(1)}%` }} />
      </div>
      <div class="counters">
        <div>
          <b data-counter="recipients">{count(n.recipients)}</b>recipients
        </div>
        {COUNTERS.map((c) => (
          <div key={c}>
            <b data-counter={c}>{count(n.counts[c])}</b>
            {c}
          </div>
        ))}
      </div>
      {moving(n) && !n.canceled && (
        <div class="cancel">
          {asking ? (
            <>
              <span>Stop sending this notification? Deliveries already made stay.</span>
              <button type="button" class="danger" onClick={() => void cancel()}>
                Yes, cancel it
              </button>
              <button type="button" onClick={() => setAsking(false)}>
                Keep sending
              </button>
            </>
          ) : (
            <button type="button" class="danger" onClick={() => setAsking(true)}>
              Cancel notification
            </button>
          )}
        </div>
      )}
      <h2>
        Latest deliveries <a href={href(['deliveries'], { notification_id: n.id })}>all, with filters →</a>
      </h2>
      <DeliveryTable rows={recent} empty="No delivery recorded yet." />
    </section>
  );
}
