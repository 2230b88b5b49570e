import type { WebhookEventType } from '../../schemas/webhooks.ts';
import type { Endpoint, WebhookRegistry } from '../../engine/state/webhooks/registry.ts';

/**
 * A process's copy of the active endpoints by project, reloaded whenever the registry's version
 * changes (an endpoint created, deleted or disabled). The version is asked after each read of
 * the streams, so an endpoint created before an entry was recorded is in the copy that entry
 * meets.
 */
export class EndpointCopy {
  private byProject = new Map<string, Endpoint[]>();
  private version: string | undefined;
  private loading: Promise<void> | undefined;
  /** When the last refresh asked the version, ms, and the refresh running, for callers that share one. */
  private askedAt = 0;
  private shared: Promise<void> | undefined;

  constructor(private readonly registry: WebhookRegistry) {}

  /**
   * Brings the copy up to date: one Redis call unless something changed. With `maxAgeMs`, a copy
   * asked about that recently is taken as it is, and callers meanwhile share one refresh: for the
   * taps of a process with no endpoint, which look for the first one every turn.
   */
  async refresh(maxAgeMs = 0): Promise<void> {
    if (maxAgeMs > 0) {
      if (Date.now() - this.askedAt < maxAgeMs) return;
      await (this.shared ??= this.refresh().finally(() => (this.shared = undefined)));
      return;
    }
    this.askedAt = Date.now();
    const version = await this.registry.version();
    if (version === this.version) return;
    this.loading ??= this.load(version).finally(() => (this.loading = undefined));
    await this.loading;
    if (version !== this.version) await this.refresh();
  }

  /** Whether any endpoint of any project is active. */
  get empty(): boolean {
    return this.byProject.size === 0;
  }

  /** Whether the project has an active endpoint. */
  has(project: string): boolean {
    return this.byProject.has(project);
  }

  /** The project's active endpoints that take `type`. */
  takers(project: string, type: WebhookEventType): Endpoint[] {
    return (this.byProject.get(project) ?? []).filter((e) => e.events.has(type));
  }

  /** Projects with an active endpoint that takes one of `types`. */
  projectsTaking(types: readonly WebhookEventType[]): string[] {
    return [...this.byProject].filter(([, list]) => list.some((e) => types.some((t) => e.events.has(t)))).map(([project]) => project);
  }

  /** When the oldest active endpoint was created, ms. */
  oldest(): number {
    const times = [...this.byProject.values()].flat().map((e) => e.createdAt);
    return times.length === 0 ? Date.now() : Math.min(...times);
  }

  /** When the first of the project's active endpoints that take one of `types` was created, ms. */
  firstTaking(project: string, types: readonly WebhookEventType[]): number {
    const times = (this.byProject.get(project) ?? []).filter((e) => types.some((t) => e.events.has(t))).map((e) => e.createdAt);
    return times.length === 0 ? Date.now() : Math.min(...times);
  }

  private async load(version: string): Promise<void> {
    const all = await this.registry.byProject();
    const active = new Map<string, Endpoint[]>();
    for (const [project, list] of all) {
      const live = list.filter((e) => e.active);
      if (live.length > 0) active.set(project, live);
    }
    this.byProject = active;
    this.version = version;
  }
}
