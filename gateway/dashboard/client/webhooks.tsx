import { useEffect, useState } from 'preact/hooks';
import type { WebhookAttempt, WebhookWithHealth } from '../../../schemas/webhooks.ts';
import { api, explain } from './api.ts';
import { count, time } from './format.ts';
import { go, href, pages, type Place } from './route.ts';

const PAGE = 50;
const STATUSES = ['delivered', 'failed'] as const;

interface Page {
  attempts: WebhookAttempt[];
  next_cursor: string | null;
}

/**
 * The project's webhook endpoints with their health, and the attempts of the one selected
 * (`#/webhooks/<id>`), filtered by status and paged by cursor like the deliveries.
 */
export function WebhooksView({ place }: { place: Place }) {
  const [list, setList] = useState<WebhookWithHealth[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    setError(null);
    api<{ webhooks: WebhookWithHealth[] }>('GET', '/api/webhooks')
      .then((answer) => live && setList(answer.webhooks))
      .catch((err: unknown) => live && setError(explain(err)));
    return () => void (live = false);
  }, [place.id]);
  const selected = list?.find((w) => w.id === place.id);
  return (
    <section>
      <h1>Webhooks</h1>
      {error !== null && <p class="error">{error}</p>}
      {list !== null && list.length === 0 && <p class="empty">No webhook endpoint yet.</p>}
      {list !== null && list.length > 0 && <EndpointTable rows={list} selected={place.id} />}
      {place.id !== null && (
        <>
          <h2>
            Attempts of <code>{selected?.url ?? place.id}</code>
          </h2>
          <Attempts id={place.id} params={place.params} />
        </>
      )}
    </section>
  );
}

function EndpointTable({ rows, selected }: { rows: readonly WebhookWithHealth[]; selected: string | null }) {
  return (
    <table class="webhooks">
      <thead>
        <tr>
          <th>URL</th>
          <th>Events</th>
          <th>State</th>
          <th>Queued</th>
          <th>Failures in row</th>
          <th>Last attempt</th>
          <th>Last success</th>
          <th>Last status</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((w) => {
          const h = w.health;
          return (
            <tr key={w.id} data-id={w.id} class={w.id === selected ? 'on' : ''}>
              <td>
                <a href={href(['webhooks', w.id])} title={w.id}>
                  {w.url}
                </a>
              </td>
              <td>{w.events.join(', ')}</td>
              <td>
                <span class={`badge ${h.state}`}>{h.state}</span>
                {h.disabled_reason !== null && (
                  <span class="hint" title={h.disabled_at ?? ''}>
                    {h.disabled_reason} {time(h.disabled_at)}
                  </span>
                )}
              </td>
              <td>{count(h.queued)}</td>
              <td title={h.failing_since === null ? '' : `failing since ${h.failing_since}`}>{count(h.failures_in_row)}</td>
              <td title={h.last_attempt_at ?? ''}>{time(h.last_attempt_at)}</td>
              <td title={h.last_success_at ?? ''}>{time(h.last_success_at)}</td>
              <td class="failure">
                {h.last_status_code ?? '—'}
                {h.last_error !== null && <div class="hint">{h.last_error}</div>}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

/** One endpoint's attempts, newest first; the status and the page's cursor live in the URL. */
function Attempts({ id, params }: { id: string; params: URLSearchParams }) {
  const status = params.get('status') ?? undefined;
  const cursor = params.get('cursor') ?? undefined;
  const [page, setPage] = useState<Page | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const key = JSON.stringify([id, status, cursor]);
  useEffect(() => {
    let live = true;
    setLoading(true);
    setError(null);
    api<Page>('GET', `/api/webhooks/${encodeURIComponent(id)}/attempts`, { status, limit: PAGE, cursor })
      .then((p) => live && (setPage(p), setLoading(false)))
      .catch((err: unknown) => live && (setError(explain(err)), setPage(null), setLoading(false)));
    return () => void (live = false);
  }, [key]);
  const open = (s: string | undefined, c?: string): void => go(href(['webhooks', id], { status: s, cursor: c }));
  const listing = `webhook-attempts${JSON.stringify([id, status])}`;
  return (
    <>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Status
          <select name="status" value={status ?? ''} onChange={(e) => open(e.currentTarget.value === '' ? undefined : e.currentTarget.value)}>
            <option value="">any</option>
            {/* A value no choice names (a link with status=bogus) is shown as it is: the gateway's refusal then reads right. */}
            {status !== undefined && !(STATUSES as readonly string[]).includes(status) && <option value={status}>{status}</option>}
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
      </form>
      <div class="pager">
        <button type="button" disabled={cursor === undefined} onClick={() => open(status, cursor === undefined ? undefined : pages.newer(listing, cursor))}>
          ← Newer
        </button>
        <button type="button" disabled={cursor === undefined} onClick={() => open(status)}>
          First page
        </button>
        <span class="status" aria-live="polite">
          {loading ? 'Loading…' : page === null ? '' : `${page.attempts.length} shown`}
        </span>
        <button
          type="button"
          disabled={loading || page?.next_cursor == null}
          onClick={() => {
            const next = page?.next_cursor;
            if (next == null) return;
            pages.older(listing, cursor, next);
            open(status, next);
          }}
        >
          Older →
        </button>
      </div>
      {error !== null && <p class="error">{error}</p>}
      {page !== null && <AttemptTable rows={page.attempts} />}
    </>
  );
}

function AttemptTable({ rows }: { rows: readonly WebhookAttempt[] }) {
  if (rows.length === 0) return <p class="empty">No attempt matches.</p>;
  return (
    <table class="attempts">
      <thead>
        <tr>
          <th>Time</th>
          <th>Event</th>
          <th>Notification</th>
          <th>Attempt</th>
          <th>Status</th>
          <th>Response</th>
          <th>Latency</th>
          <th>Error</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((a) => (
          <tr key={`${a.event_id}:${a.attempt}`} data-event={a.event_id} class={`row-${a.status}`}>
            <td title={a.at}>{time(a.at)}</td>
            <td>
              {a.event_type} <span class="tail">{a.event_id}</span>
            </td>
            <td>
              {a.notification_id === '' ? (
                '—'
              ) : (
                <a href={href(['notifications', a.notification_id])} title={a.notification_id}>
                  {a.notification_id.slice(0, 8)}…
                </a>
              )}
            </td>
            <td>{a.attempt}</td>
            <td>
              <span class={`badge ${a.status}`}>{a.status}</span>
            </td>
            <td>{a.response_code ?? '—'}</td>
            <td>{a.latency_ms} ms</td>
            <td class="failure">{a.error ?? '—'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
