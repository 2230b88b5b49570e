import { useState } from 'preact/hooks';
import { api, ApiError, explain, storeKey } from './api.ts';

/**
 * Asks for a REST key once per browser session and keeps it only if the gateway takes it.
 * `notice` says why it asks again (the last key was refused).
 */
export function KeyGate({ onKey, notice }: { onKey: (key: string) => void; notice: string | null }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(notice);
  const [checking, setChecking] = useState(false);
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    const candidate = key.trim();
    if (candidate === '') return;
    setChecking(true);
    setError(null);
    try {
      await api('GET', '/api/deliveries', { limit: 1 }, { key: candidate });
      storeKey(candidate);
      onKey(candidate);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) setError('This key is not valid.');
      else if (err instanceof ApiError && err.status === 403) setError('This key may not read deliveries: the dashboard needs a REST key, not an SDK key.');
      else setError(explain(err));
    } finally {
      setChecking(false);
    }
  };
  return (
    <form class="gate" onSubmit={(e) => void submit(e)}>
      <h1>Delivery dashboard</h1>
      <p>Enter a REST key of your project. It is kept in this browser tab only.</p>
      <input
        type="password"
        name="key"
        autocomplete="off"
        placeholder="REST key"
        value={key}
        onInput={(e) => setKey(e.currentTarget.value)}
        autofocus
      />
      <button type="submit" disabled={checking}>
        {checking ? 'Checking…' : 'Open'}
      </button>
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}
