import { useEffect, useState } from 'preact/hooks';

/**
 * The page's place lives in the URL's fragment: `#/deliveries?status=failed`, `#/users/alice`,
 * `#/notifications/<id>`, `#/live?channel=PUSH`, `#/webhooks/<id>?status=failed`. A view with its filters can be shared as a link
 * (the key is never part of it); the gateway serves one page for all of them.
 */
export interface Place {
  view: 'deliveries' | 'notifications' | 'notification' | 'user' | 'live' | 'webhooks';
  id: string | null;
  params: URLSearchParams;
}

export function readPlace(hash = location.hash): Place {
  const [path = '', query = ''] = hash.replace(/^#/, '').split('?', 2);
  const parts = path.split('/').filter((p) => p !== '').map(decodeURIComponent);
  const params = new URLSearchParams(query);
  const [head, id] = parts;
  if (head === 'users' && id !== undefined) return { view: 'user', id, params };
  if (head === 'notifications' && id !== undefined) return { view: 'notification', id, params };
  if (head === 'notifications') return { view: 'notifications', id: null, params };
  if (head === 'live') return { view: 'live', id: null, params };
  if (head === 'webhooks') return { view: 'webhooks', id: id ?? null, params };
  return { view: 'deliveries', id: null, params };
}

/** The fragment of a place: `href(['users', 'alice'])`, `href(['deliveries'], { status: 'failed' })`. */
export function href(path: readonly string[], params: Record<string, string | undefined> = {}): string {
  const q = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== '') q.set(name, value);
  const s = q.toString();
  return `#/${path.map(encodeURIComponent).join('/')}${s === '' ? '' : `?${s}`}`;
}

export function go(to: string): void {
  if (location.hash !== to) location.hash = to;
}

/** The current place, updated as the fragment changes. */
export function usePlace(): Place {
  const [place, setPlace] = useState(readPlace);
  useEffect(() => {
    const onChange = (): void => setPlace(readPlace());
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return place;
}

/**
 * The cursor each page was reached from, per listing and filters: "Newer" goes back one page, and
 * a page opened from a link (no way back known) goes to the first page instead.
 */
const reachedFrom = new Map<string, string | undefined>();

export const pages = {
  older(listing: string, from: string | undefined, to: string): void {
    reachedFrom.set(`${listing}\n${to}`, from);
  },
  newer(listing: string, at: string): string | undefined {
    return reachedFrom.get(`${listing}\n${at}`);
  },
};
