/// <reference lib="dom" />
/**
 * What bench/dashboard.ts measures inside the page: a script installed before the dashboard's own
 * (Playwright's addInitScript) that keeps its times on `window.benchProbe`, in the page's clock
 * (performance.now(), 0 at navigation start), so no polling from Node adds to them.
 */
import type { Page } from 'playwright-core';

/** The table's first commit after the awaited load, and the animation frame that painted it. */
export interface TableShown {
  /** When the status line turned to "N shown" with the rows in the DOM. */
  at: number;
  /** The next animation frame: the rows are on screen from this frame on. */
  painted: number | null;
  rows: number;
  first: string | null;
}

export interface Probe {
  /** The event type that counts as the user's action (`change`, `keydown` for Enter, `click`); null: the navigation. */
  armed: string | null;
  /** When the armed event was dispatched (capture phase, before the page's handlers). */
  action: number | null;
  /** When the probe was armed: fetches and resource entries from here on belong to the action. */
  mark: number;
  /** Whether the status line showed "Loading…" since the action (the table reloads for it). */
  loadingSeen: boolean;
  table: TableShown | null;
  /** When the last chart canvas was added to the page since `mark`. */
  lastCanvas: number | null;
  canvases: number;
  /** Every fetch the page started, with its start. */
  fetches: { url: string; start: number }[];
}

type ProbeWindow = { benchProbe: Probe };

/** Runs in the page before its scripts (sent as its source: it must close over nothing). */
export function installProbe(key: string): void {
  sessionStorage.setItem('svc.dashboard.key', key);
  performance.setResourceTimingBufferSize(100_000);
  const probe: Probe = { armed: null, action: null, mark: 0, loadingSeen: false, table: null, lastCanvas: null, canvases: 0, fetches: [] };
  (window as unknown as ProbeWindow).benchProbe = probe;
  const fetchAll = window.fetch.bind(window);
  window.fetch = (input: RequestInfo | URL, init?: RequestInit) => {
    probe.fetches.push({ url: typeof input === 'string' ? input : input instanceof URL ? input.href : input.url, start: performance.now() });
    return fetchAll(input, init);
  };
  for (const type of ['change', 'keydown', 'click']) {
    const onEvent = (e: Event): void => {
      if (probe.armed !== type || probe.action !== null) return;
      if (e instanceof KeyboardEvent && e.key !== 'Enter') return;
      probe.action = performance.now();
    };
    window.addEventListener(type, onEvent, true);
  }
  new MutationObserver((records) => {
    for (const record of records) {
      for (const node of Array.from(record.addedNodes)) {
        if (node instanceof Element && (node.tagName === 'CANVAS' || node.querySelector('canvas') !== null)) probe.lastCanvas = performance.now();
      }
    }
    probe.canvases = document.querySelectorAll('.charts .chart canvas').length;
    const status = document.querySelector('.pager .status')?.textContent ?? '';
    if (status.startsWith('Loading')) {
      if (probe.armed === null || probe.action !== null) probe.loadingSeen = true;
      return;
    }
    // After an action the old rows stay until the new ones come: wait for a reload to end.
    const awaited = probe.table === null && (probe.armed === null || (probe.action !== null && probe.loadingSeen));
    if (!awaited || !status.includes('shown')) return;
    const rows = document.querySelectorAll('table.deliveries tbody tr[data-id]');
    const shown: TableShown = { at: performance.now(), painted: null, rows: rows.length, first: rows[0]?.getAttribute('data-id') ?? null };
    probe.table = shown;
    requestAnimationFrame(() => void (shown.painted = performance.now()));
  }).observe(document, { subtree: true, childList: true, characterData: true });
}

/**
 * The init script: `installProbe` for `key`. tsx compiles this file with esbuild's keepNames,
 * which wraps named functions in a `__name` helper the page does not have: it gets a stand-in,
 * kept for the functions page.evaluate sends later.
 */
export function probeScript(key: string): string {
  return `globalThis.__name = (f) => f;\n(${installProbe.toString()})(${JSON.stringify(key)});`;
}

/** Makes the next `type` event the action awaited, and forgets the previous one. */
export async function arm(page: Page, type: 'change' | 'keydown' | 'click'): Promise<void> {
  await page.evaluate((t) => {
    const p = (window as unknown as ProbeWindow).benchProbe;
    Object.assign(p, { armed: t, action: null, mark: performance.now(), loadingSeen: false, table: null, lastCanvas: null });
  }, type);
}

/** Waits until the awaited load painted the table; returns the probe then. */
export async function tableShown(page: Page): Promise<Probe> {
  await page.waitForFunction(() => (window as unknown as ProbeWindow).benchProbe.table?.painted != null, undefined, { timeout: 120_000, polling: 50 });
  return page.evaluate(() => (window as unknown as ProbeWindow).benchProbe);
}

/** One request of the page, from its resource timing entry (ms in the page's clock). */
export interface RequestTiming {
  path: string;
  start: number;
  /** Queued in the browser (its 6 connections per origin busy) before the request went out. */
  stalled: number;
  /** Request sent to the first byte of the answer: the gateway's time. */
  waiting: number;
  end: number;
}

/**
 * Waits until every fetch the page started since the probe's mark has its answer and nothing was
 * drawn for `quietMs` (the charts come after the table); returns those requests, in order.
 */
export async function settled(page: Page, quietMs = 400): Promise<{ requests: RequestTiming[]; probe: Probe }> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const state = await page.evaluate(() => {
      const p = (window as unknown as ProbeWindow).benchProbe;
      const entries = performance
        .getEntriesByType('resource')
        .filter((e): e is PerformanceResourceTiming => e instanceof PerformanceResourceTiming && e.initiatorType === 'fetch' && e.startTime >= p.mark);
      const requests = entries.map((e) => ({ path: new URL(e.name).pathname + new URL(e.name).search, start: e.startTime, stalled: e.requestStart - e.startTime, waiting: e.responseStart - e.requestStart, end: e.responseEnd }));
      return { probe: p, requests, started: p.fetches.filter((f) => f.start >= p.mark).length, now: performance.now() };
    });
    const last = Math.max(state.probe.lastCanvas ?? 0, ...state.requests.map((r) => r.end));
    if (state.requests.length >= state.started && state.now - last >= quietMs) return { requests: state.requests.sort((a, b) => a.start - b.start), probe: state.probe };
    if (Date.now() > deadline) throw new Error(`the page did not settle: ${state.requests.length} of ${state.started} fetches answered`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
