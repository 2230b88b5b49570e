import { useEffect, useState } from 'preact/hooks';
import type { EventView, MessageDelivery } from '../../../schemas/queries.ts';
import type { UserView } from '../../../schemas/users.ts';
import { api, ApiError, explain } from './api.ts';
import { DeliveryTable } from './delivery-table.tsx';
import { time } from './format.ts';
import { href } from './route.ts';

/** One part of the view as it loads: null while loading, else its value or why it failed. */
type Part<T> = { value: T } | { error: string } | null;

/** Loads one part of the view afresh whenever `id` changes; a part that fails does not hide the others. */
function usePart<T>(id: string, load: (id: string) => Promise<T>): Part<T> {
  const [part, setPart] = useState<Part<T>>(null);
  useEffect(() => {
    let live = true;
    setPart(null);
    load(id)
      .then((value) => live && setPart({ value }))
      .catch((err: unknown) => live && setPart({ error: explain(err) }));
    return () => void (live = false);
  }, [id]);
  return part;
}

const loadUser = (id: string): Promise<UserView | null> =>
  api<UserView>('GET', `/api/users/${encodeURIComponent(id)}`).catch((err: unknown) => {
    if (err instanceof ApiError && err.status === 404) return null;
    throw err;
  });
const loadEvents = async (id: string): Promise<EventView[]> => (await api<{ events: EventView[] }>('GET', '/api/events', { external_id: id, limit: 20 })).events;
const loadDeliveries = async (id: string): Promise<MessageDelivery[]> =>
  (await api<{ deliveries: MessageDelivery[] }>('GET', '/api/deliveries', { external_id: id, limit: 20 })).deliveries;

/** A part still loading or that failed, in place of its content. */
function Pending({ part }: { part: Part<unknown> }) {
  return part === null ? <p>Loading…</p> : <p class="error">{'error' in part ? part.error : ''}</p>;
}

/**
 * One user: tags, subscriptions with their state, consent (Redis, the applied state), recent
 * events and deliveries (ClickHouse). Each loads on its own, so a slow or failing ClickHouse
 * leaves the applied state in view.
 */
export function UserDetail({ id }: { id: string }) {
  const userPart = usePart(id, loadUser);
  const events = usePart(id, loadEvents);
  const deliveries = usePart(id, loadDeliveries);
  const user = userPart !== null && 'value' in userPart ? userPart.value : undefined;
  return (
    <section>
      <h1>
        User <code>{id}</code>
      </h1>
      {user === undefined ? (
        <Pending part={userPart} />
      ) : user === null ? (
        <p class="empty">No applied state for this user (unknown, or not applied yet).</p>
      ) : (
        <>
          <dl class="facts">
            <dt>Created</dt>
            <dd>{time(user.created_at)}</dd>
            <dt>Updated</dt>
            <dd>{time(user.updated_at)}</dd>
          </dl>
          <h2>Subscriptions</h2>
          {user.subscriptions.length === 0 ? (
            <p class="empty">None.</p>
          ) : (
            <table class="subscriptions">
              <thead>
                <tr>
                  <th>Type</th>
                  <th>Id</th>
                  <th>Token</th>
                  <th>Device</th>
                  <th>App</th>
                  <th>State</th>
                  <th>Updated</th>
                </tr>
              </thead>
              <tbody>
                {user.subscriptions.map((s) => (
                  <tr key={s.id} class={`sub-${s.state}`}>
                    <td>{s.type}</td>
                    <td class="code">{s.id}</td>
                    <td class="tail">{s.token_tail}</td>
                    <td>{[s.device_model, s.device_os].filter((v) => v !== null).join(' · ') || '—'}</td>
                    <td>{s.app_version ?? '—'}</td>
                    <td>
                      <span class={`badge ${s.state}`}>{s.state}</span>
                    </td>
                    <td>{time(s.updated_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <h2>Tags</h2>
          {Object.keys(user.tags).length === 0 ? (
            <p class="empty">None.</p>
          ) : (
            <table class="tags">
              <tbody>
                {Object.entries(user.tags).map(([k, v]) => (
                  <tr key={k}>
                    <th>{k}</th>
                    <td>{String(v)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <h2>Consent</h2>
          {Object.keys(user.consent).length === 0 ? (
            <p class="empty">No opt-out recorded.</p>
          ) : (
            <ul class="consent">
              {Object.entries(user.consent).map(([channel, c]) => (
                <li key={channel}>
                  {channel}: {c.opted_out ? 'opted out' : 'opted in'} since {time(c.at)}
                </li>
              ))}
            </ul>
          )}
        </>
      )}
      <h2>Recent events</h2>
      {events === null || 'error' in events ? (
        <Pending part={events} />
      ) : events.value.length === 0 ? (
        <p class="empty">None recorded.</p>
      ) : (
        <table class="events">
          <thead>
            <tr>
              <th>Time</th>
              <th>Name</th>
              <th>Properties</th>
            </tr>
          </thead>
          <tbody>
            {events.value.map((e, i) => (
              <tr key={`${e.at}${i}`}>
                <td>{time(e.at)}</td>
                <td>{e.name}</td>
                <td>
                  <code>{JSON.stringify(e.properties)}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>
        Recent deliveries <a href={href(['deliveries'], { external_id: id })}>all, with filters →</a>
      </h2>
      {deliveries === null || 'error' in deliveries ? <Pending part={deliveries} /> : <DeliveryTable rows={deliveries.value} empty="No delivery recorded." />}
    </section>
  );
}
