import { useEffect, useState } from 'preact/hooks';
import type { EventView, MessageDelivery } from '../../../schemas/queries.ts';
import type { UserView } from '../../../schemas/users.ts';
import { api, ApiError, explain } from './api.ts';
import { DeliveryTable } from './delivery-table.tsx';
import { time } from './format.ts';
import { href } from './route.ts';

interface Loaded {
  user: UserView | null;
  events: EventView[];
  deliveries: MessageDelivery[];
}

/** One user: tags, subscriptions with their state, consent, recent events and deliveries. */
export function UserDetail({ id }: { id: string }) {
  const [data, setData] = useState<Loaded | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    setData(null);
    setError(null);
    const user = api<UserView>('GET', `/api/users/${encodeURIComponent(id)}`).catch((err: unknown) => {
      if (err instanceof ApiError && err.status === 404) return null;
      throw err;
    });
    Promise.all([
      user,
      api<{ events: EventView[] }>('GET', '/api/events', { external_id: id, limit: 20 }),
      api<{ deliveries: MessageDelivery[] }>('GET', '/api/deliveries', { external_id: id, limit: 20 }),
    ])
      .then(([u, e, d]) => live && setData({ user: u, events: e.events, deliveries: d.deliveries }))
      .catch((err: unknown) => live && setError(explain(err)));
    return () => void (live = false);
  }, [id]);
  if (error !== null) return <p class="error">{error}</p>;
  if (data === null) return <p>Loading…</p>;
  const { user } = data;
  return (
    <section>
      <h1>
        User <code>{id}</code>
      </h1>
      {user === null ? (
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
                  <th>Token</th>
                  <th>Device</th>
                  <th>App</th>
                  <th>State</th>
                  <th>Updated</th>
                </tr>
              </thead>
              <tbody>
                {user.subscriptions.map((s) => (
                  <tr key={`${s.type}${s.token_tail}`} class={`sub-${s.state}`}>
                    <td>{s.type}</td>
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
      {data.events.length === 0 ? (
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
            {data.events.map((e, i) => (
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
      <DeliveryTable rows={data.deliveries} empty="No delivery recorded." />
    </section>
  );
}
