import type { Notifications } from '../../engine/state/notifications/lifecycle.ts';
import type { NotificationSpec } from '../../schemas/notifications.ts';

/** Most notifications whose spec a dispatch process keeps. */
const MAX_SPECS = 1000;

/**
 * The specs of notifications being dispatched, read once from their records: a spec never changes
 * after the accept (cancel is read fresh for every job). Concurrent reads of one share a call.
 */
export class Specs {
  private readonly cache = new Map<string, NotificationSpec | null>();
  private readonly loading = new Map<string, Promise<NotificationSpec | null>>();

  constructor(private readonly notifications: Pick<Notifications, 'read'>) {}

  get(id: string): Promise<NotificationSpec | null> {
    const cached = this.cache.get(id);
    if (cached !== undefined) return Promise.resolve(cached);
    let loading = this.loading.get(id);
    if (!loading) {
      loading = this.notifications
        .read(id)
        .then((record) => {
          const spec = record?.spec ?? null;
          if (this.cache.size >= MAX_SPECS) this.cache.delete(this.cache.keys().next().value ?? '');
          this.cache.set(id, spec);
          return spec;
        })
        .finally(() => this.loading.delete(id));
      this.loading.set(id, loading);
    }
    return loading;
  }
}
