import { useEffect, useRef, useState } from 'preact/hooks';
import type { MessageDelivery } from '../../../schemas/queries.ts';
import { queryString, storedKey } from './api.ts';
import { DeliveryTable } from './delivery-table.tsx';
import { FilterBar, filtersOf } from './filters.tsx';
import { go, href, type Place } from './route.ts';

/** Rows kept on screen; older ones fall off the bottom. */
const KEEP = 200;

type Frame = { deliveries: MessageDelivery[] } | { gap: { missed: number } };
type State = 'connecting' | 'open' | 'closed';

/**
 * The live tail of GET /api/deliveries/live, narrowed by the same filters (without the time
 * range). Paused, new records are held (the newest KEEP) and counted, and shown on resume. When
 * the gateway had to drop records for this browser it says so, and the gap is shown in place.
 */
export function LiveView({ place }: { place: Place }) {
  const filters = filtersOf(place.params);
  delete filters.since;
  delete filters.until;
  const [rows, setRows] = useState<MessageDelivery[]>([]);
  const [state, setState] = useState<State>('connecting');
  const [paused, setPaused] = useState(false);
  const [held, setHeld] = useState(0);
  const [missed, setMissed] = useState(0);
  const holding = useRef<MessageDelivery[]>([]);
  const pausedRef = useRef(false);
  pausedRef.current = paused;
  const key = JSON.stringify(filters);
  useEffect(() => {
    setRows([]);
    setState('connecting');
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(`${scheme}//${location.host}/api/deliveries/live${queryString(filters)}`, [`bearer.${storedKey() ?? ''}`]);
    ws.onopen = () => setState('open');
    ws.onclose = () => setState('closed');
    ws.onmessage = (e: MessageEvent<string>) => {
      const frame = JSON.parse(e.data) as Frame;
      if ('gap' in frame) {
        setMissed((m) => m + frame.gap.missed);
        return;
      }
      const fresh = [...frame.deliveries].reverse();
      if (pausedRef.current) {
        holding.current = [...fresh, ...holding.current].slice(0, KEEP);
        setHeld((h) => h + fresh.length);
      } else setRows((r) => [...fresh, ...r].slice(0, KEEP));
    };
    return () => ws.close();
  }, [key]);
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
        <button type="button" onClick={toggle}>
          {paused ? 'Resume' : 'Pause'}
        </button>
        {paused && <span>{held} new while paused</span>}
        {missed > 0 && (
          <span class="warning">{missed} records were not sent to this browser: it read them too slowly.</span>
        )}
      </div>
      <DeliveryTable rows={rows} empty={state === 'open' ? 'Waiting for new delivery records…' : 'Not connected.'} />
    </section>
  );
}
