import type { MessageDelivery } from '../../../schemas/queries.ts';
import { time } from './format.ts';
import { href } from './route.ts';

/**
 * Delivery records as rows: links to the user and the notification views, and under every
 * failure or skip the operator hint of its error code (docs/providers.md#delivery-error-codes).
 */
export function DeliveryTable({ rows, empty = 'No delivery matches.' }: { rows: readonly MessageDelivery[]; empty?: string }) {
  if (rows.length === 0) return <p class="empty">{empty}</p>;
  return (
    <table class="deliveries">
      <thead>
        <tr>
          <th>Time</th>
          <th>User</th>
          <th>Notification</th>
          <th>Channel</th>
          <th>Subscription</th>
          <th>Attempt</th>
          <th>Status</th>
          <th>Error code / hint</th>
          <th>Latency</th>
          <th>Receipt</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((d) => (
          <tr key={d.id} data-id={d.id} class={`row-${d.status}`}>
            <td title={d.at}>{time(d.at)}</td>
            <td>
              <a href={href(['users', d.external_id])}>{d.external_id}</a>
            </td>
            <td>
              <a href={href(['notifications', d.notification_id])} title={d.notification_id}>
                {d.notification_id.slice(0, 8)}…
              </a>
            </td>
            <td>{d.channel}</td>
            <td>
              {d.subscription_type ?? '—'}
              {d.token_tail !== null && <span class="tail"> {d.token_tail}</span>}
            </td>
            <td>{d.attempt}</td>
            <td>
              <span class={`badge ${d.status}`}>{d.status}</span>
              {d.retrying === true && <span class="badge retrying">retrying</span>}
            </td>
            <td class="failure">
              {d.error_code !== null && (
                <a class="code" href={href(['deliveries'], { error_code: d.error_code })}>
                  {d.error_code}
                </a>
              )}
              {d.hint !== null && <div class="hint">{d.hint}</div>}
            </td>
            <td>{d.latency_ms === null ? '—' : `${d.latency_ms} ms`}</td>
            <td>{d.receipt ?? '—'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
