import { useEffect, useState } from 'preact/hooks';
import { fromLocalInput, toLocalInput } from './format.ts';

/** The filters of GET /api/deliveries (docs/api.md#listing-and-counting-deliveries), as the URL and the live tail carry them. */
export const FILTERS = ['status', 'channel', 'subscription_type', 'external_id', 'notification_id', 'error_code', 'since', 'until'] as const;
export type FilterName = (typeof FILTERS)[number];
export type Filters = Partial<Record<FilterName, string>>;

const CHOICES: Partial<Record<FilterName, readonly string[]>> = {
  status: ['sent', 'failed', 'skipped'],
  channel: ['PUSH', 'SMS', 'EMAIL'],
  subscription_type: ['IOS_PUSH', 'ANDROID_PUSH', 'WEB_PUSH', 'SMS', 'EMAIL'],
};

const LABELS: Record<FilterName, string> = {
  status: 'Status',
  channel: 'Channel',
  subscription_type: 'Subscription',
  external_id: 'User',
  notification_id: 'Notification',
  error_code: 'Error code',
  since: 'From',
  until: 'Until',
};

export function filtersOf(params: URLSearchParams): Filters {
  const out: Filters = {};
  for (const name of FILTERS) {
    const value = params.get(name);
    if (value !== null && value !== '') out[name] = value;
  }
  return out;
}

/**
 * The filter bar. Choices apply at once; text fields apply on Enter or when they lose focus, so a
 * user id being typed does not send a query per key.
 */
export function FilterBar({ filters, onChange, times = true }: { filters: Filters; onChange: (f: Filters) => void; times?: boolean }) {
  const [draft, setDraft] = useState<Filters>(filters);
  useEffect(() => setDraft(filters), [JSON.stringify(filters)]);
  const apply = (next: Filters): void => {
    const clean: Filters = {};
    for (const name of FILTERS) {
      const v = next[name]?.trim();
      if (v !== undefined && v !== '') clean[name] = v;
    }
    if (JSON.stringify(clean) !== JSON.stringify(filters)) onChange(clean);
  };
  const set = (name: FilterName, value: string, now: boolean): void => {
    const next = { ...draft, [name]: value };
    setDraft(next);
    if (now) apply(next);
  };
  const names = FILTERS.filter((n) => times || (n !== 'since' && n !== 'until'));
  return (
    <form class="filters" onSubmit={(e) => (e.preventDefault(), apply(draft))}>
      {names.map((name) => {
        const choices = CHOICES[name];
        const value = draft[name] ?? '';
        if (choices !== undefined) {
          return (
            <label key={name}>
              {LABELS[name]}
              <select name={name} value={value} onChange={(e) => set(name, e.currentTarget.value, true)}>
                <option value="">any</option>
                {/* A value no choice names (a link with status=bogus) is shown as it is: the gateway's refusal then reads right. */}
                {value !== '' && !choices.includes(value) && <option value={value}>{value}</option>}
                {choices.map((c) => (
                  <option key={c} value={c}>
                    {c}
                  </option>
                ))}
              </select>
            </label>
          );
        }
        if (name === 'since' || name === 'until') {
          return (
            <label key={name}>
              {LABELS[name]}
              <input
                type="datetime-local"
                step="1"
                name={name}
                value={toLocalInput(value)}
                onChange={(e) => set(name, fromLocalInput(e.currentTarget.value) ?? '', true)}
              />
            </label>
          );
        }
        return (
          <label key={name}>
            {LABELS[name]}
            <input
              name={name}
              value={value}
              placeholder="any"
              onInput={(e) => set(name, e.currentTarget.value, false)}
              onBlur={() => apply(draft)}
            />
          </label>
        );
      })}
      <button type="submit">Apply</button>
      {Object.keys(filters).length > 0 && (
        <button type="button" class="quiet" onClick={() => (setDraft({}), onChange({}))}>
          Clear
        </button>
      )}
    </form>
  );
}
