import { useEffect, useRef, useState } from 'preact/hooks';
import type { MessageDelivery } from '../../../schemas/queries.ts';
import { api, explain, queryString, storedKey } from './api.ts';
import { DeliveryTable } from './delivery-table.tsx';
import { FilterBar, filtersOf, type Filters } from './filters.tsx';
import { go, href, type Place } from './route.ts';

/** Rows kept on screen; older ones fall off the bottom. */
const KEEP = 200;

/** `missed` is null when the gateway does not know how many (it resubscribed to Redis). */
type Frame = { deliveries: MessageDelivery[] } | { gap: { missed: number | null } };
type State = 'connecting' | 'open' | 'closed';

/**
 * Why a tail that never opened was refused. A browser hides the status of a refused upgrade, so
 * GET /api/deliveries with the same key and filters asks again: it is checked the same way, and a
 * 401 there sends the page back to the key prompt.
 */
async function refusal(filters: Filters, code: number): Promise<string> {
  try {
    await api('GET', '/api/deliveries', { ...filters, limit: 1 });
  } catch (err) {
    return `Refused: ${explain(err)}`;
  }
  return `The connection failed (close code ${code}): the gateway is unreachable or refused it.`;
}

/** Why a tail that was open closed, from its close frame. */
function closing(e: CloseEvent): string {
  return `Closed by the gateway (close code ${e.code}${e.reason === '' ? '' : `: ${e.reason}`}).`;
}

/**
 * The live tail of GET /api/deliveries/live, narrowed by the same filters (without the time
 * range). Paused, new records are held (the newest KEEP) and counted, and shown on resume. When
 * the gateway had to drop records for this browser it says so. A closed tail says why, and
 * offers to connect again.
 */
export function LiveView({ place }: { place: Place }) {
  const filters = filtersOf(place.params);
  delete filters.since;
  delete filters.until;
  const [rows, setRows] = useState<MessageDelivery[]>([]);
  const [state, setState] = useState<State>('connecting');
  const [reason, setReason] = useState<string | null>(null);
  const [attempt, setAttempt] = useState(0);
  const [paused, setPaused] = useState(false);
  const [held, setHeld] = useState(0);
  const [missed, setMissed] = useState(0);
  const [unknownGap, setUnknownGap] = useState(false);
  const holding = useRef<MessageDelivery[]>([]);
  const pausedRef = useRef(false);
  pausedRef.current = paused;
  const key = JSON.stringify(filters);
  useEffect(() => {
    let live = true;
    let opened = false;
    setRows([]);
    setState('connecting');
    setReason(null);
    setMissed(0);
    setUnknownGap(false);
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(`${scheme}//${location.host}/api/deliveries/live${queryString(filters)}`, [`bearer.${storedKey() ?? ''}`]);
    ws.onopen = () => {
      opened = true;
      setState('open');
    };
    ws.onclose = (e) => {
      if (!live) return;
      setState('closed');
      if (opened) setReason(closing(e));
      else void refusal(filters, e.code).then((why) => live && setReason(why));
    };
    ws.onmessage = (e: MessageEvent<string>) => {
      const frame = JSON.parse(e.data) as Frame;
      if ('gap' in frame) {
        const n = frame.gap.missed;
        if (n === null) setUnknownGap(true);
        else setMissed((m) => m + n);
        return;
      }
      const fresh = [...frame.deliveries].reverse();
      if (pausedRef.current) {
        holding.current = [...fresh, ...holding.current].slice(0, KEEP);
        setHeld((h) => h + fresh.length);
      } else setRows((r) => [...fresh, ...r].slice(0, KEEP));
    };
    return () => {
      live = false;
      ws.close();
    };
  }, [key, attempt]);
  const toggle = (): void => {
    if (paused) {
      const shown = holding.current;
      holding.current = [];
      setRows((r) => [...shown, ...r].slice(0, KEEP));
      setHeld(0);
    }
    setPaused(!paused);
  };
  return (
    <section>
      <h1>Live tail</h1>
      <FilterBar filters={filters} times={false} onChange={(f) => go(href(['live'], f))} />
      <div class="pager">
        <span class={`badge ${state}`} data-testid="live-state">
          {state}
        </span>
        {state === 'closed' ? (
          <button type="button" onClick={() => setAttempt((a) => a + 1)}>
            Reconnect
          </button>
        ) : (
          <button type="button" onClick={toggle}>
            {paused ? 'Resume' : 'Pause'}
          </button>
        )}
        {paused && <span>{held} new while paused</span>}
        {reason !== null && (
          <span class="error" data-testid="live-reason">
            {reason}
          </span>
        )}
      </div>
      {missed > 0 && <p class="warning">{missed} records were not sent to this browser: it read them too slowly.</p>}
      {unknownGap && (
        <p class="warning">
          Some records were missed: the gateway lost its connection to Redis for a while. Read them with the deliveries view.
        </p>
      )}
      <DeliveryTable rows={rows} empty={state === 'open' ? 'Waiting for new delivery records…' : 'Not connected.'} />
    </section>
  );
}
