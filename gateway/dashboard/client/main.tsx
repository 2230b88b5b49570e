import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { onKeyRefused, storedKey, storeKey } from './api.ts';
import { DeliveriesView } from './deliveries.tsx';
import { HealthBanner } from './health.tsx';
import { KeyGate } from './key-gate.tsx';
import { LiveView } from './live.tsx';
import { NotificationDetail } from './notification.tsx';
import { NotificationsView } from './notifications.tsx';
import { go, href, usePlace, type Place } from './route.ts';
import { UserDetail } from './user.tsx';
import { WebhooksView } from './webhooks.tsx';
import './style.css';

function View({ place }: { place: Place }) {
  switch (place.view) {
    case 'user':
      return <UserDetail id={place.id ?? ''} />;
    case 'notification':
      return <NotificationDetail id={place.id ?? ''} />;
    case 'notifications':
      return <NotificationsView place={place} />;
    case 'live':
      return <LiveView place={place} />;
    case 'webhooks':
      return <WebhooksView place={place} />;
    default:
      return <DeliveriesView place={place} />;
  }
}

const REFUSED = 'The gateway no longer accepts the key of this tab (revoked?). Enter a valid REST key.';

function App() {
  const [key, setKey] = useState(storedKey);
  const [notice, setNotice] = useState<string | null>(null);
  const place = usePlace();
  useEffect(
    () =>
      onKeyRefused(() => {
        setNotice(REFUSED);
        setKey(null);
      }),
    [],
  );
  if (key === null) {
    const open = (k: string): void => {
      setNotice(null);
      setKey(k);
    };
    return <KeyGate onKey={open} notice={notice} />;
  }
  const tab = (view: Place['view'], label: string, path: string[]) => (
    <a href={href(path)} class={place.view === view ? 'on' : ''}>
      {label}
    </a>
  );
  return (
    <>
      <header>
        <b>Deliveries dashboard</b>
        <nav>
          {tab('deliveries', 'Deliveries', ['deliveries'])}
          {tab('notifications', 'Notifications', ['notifications'])}
          {tab('live', 'Live tail', ['live'])}
          {tab('webhooks', 'Webhooks', ['webhooks'])}
        </nav>
        <form
          class="find"
          onSubmit={(e) => {
            e.preventDefault();
            const id = new FormData(e.currentTarget).get('user');
            if (typeof id === 'string' && id.trim() !== '') go(href(['users', id.trim()]));
          }}
        >
          <input name="user" placeholder="Find a user by external_id" />
        </form>
        <a href="/api/docs">API reference</a>
        <button type="button" class="quiet" onClick={() => (storeKey(null), setKey(null))}>
          Forget key
        </button>
      </header>
      <HealthBanner />
      <main>
        <View place={place} />
      </main>
    </>
  );
}

const root = document.getElementById('app');
if (root !== null) render(<App />, root);
