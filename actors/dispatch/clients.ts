import type { RedisClient } from '../../engine/infra/redis/client.ts';
import type { Topology } from '../../engine/infra/redis/topology.ts';
import { ProviderStore } from '../../engine/state/keys/provider-store.ts';
import { ProviderNames } from '../../schemas/providers.ts';
import { closeProviderClients, createProviderClients, type ClientOptions, type ProjectCredentials, type ProviderClients } from './providers/index.ts';

/** How long a project's credentials are trusted before they are read again, ms. */
const REFRESH_MS = 30_000;
/** Most projects whose clients are kept open. */
const MAX_PROJECTS = 1000;

interface Held {
  clients: ProviderClients;
  /** The credential hash as read, to tell whether it changed. */
  source: string;
  readAt: number;
}

/**
 * The provider clients of each project, long-lived and shared by every send of this process
 * (pooled connections, one APNs token per key). Credentials are read again every REFRESH_MS;
 * when they changed (`engine providers set`), new clients take over and the old ones close once
 * their sends in flight finish.
 */
export class ProjectClients {
  private readonly held = new Map<string, Held>();
  private readonly loading = new Map<string, Promise<ProviderClients>>();

  private readonly credentials: ProviderStore;

  constructor(
    redis: RedisClient,
    topology: Topology,
    private readonly options: ClientOptions,
  ) {
    this.credentials = new ProviderStore(redis, topology);
  }

  get(project: string): Promise<ProviderClients> {
    const held = this.held.get(project);
    if (held && Date.now() - held.readAt < REFRESH_MS) return Promise.resolve(held.clients);
    let loading = this.loading.get(project);
    if (!loading) {
      loading = this.load(project, held).finally(() => this.loading.delete(project));
      this.loading.set(project, loading);
    }
    return loading;
  }

  async close(): Promise<void> {
    const all = [...this.held.values()];
    this.held.clear();
    await Promise.all(all.map((h) => closeProviderClients(h.clients)));
  }

  private async load(project: string, held: Held | undefined): Promise<ProviderClients> {
    const hash = await this.credentials.all(project);
    const source = JSON.stringify(ProviderNames.map((p) => hash[p] ?? null));
    if (held && held.source === source) {
      held.readAt = Date.now();
      return held.clients;
    }
    const creds = Object.fromEntries(ProviderNames.filter((p) => hash[p] !== undefined).map((p) => [p, JSON.parse(hash[p] ?? 'null') as unknown])) as ProjectCredentials;
    const clients = createProviderClients(creds, this.options);
    if (held) void closeProviderClients(held.clients);
    if (!held && this.held.size >= MAX_PROJECTS) {
      const [oldest] = this.held;
      if (oldest) {
        this.held.delete(oldest[0]);
        void closeProviderClients(oldest[1].clients);
      }
    }
    this.held.set(project, { clients, source, readAt: Date.now() });
    return clients;
  }
}
