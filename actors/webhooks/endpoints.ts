import type { WebhookEventType } from '../../schemas/webhooks.ts';
import type { Endpoint, WebhookRegistry } from '../../engine/webhooks/registry.ts';

/** How long a copy is trusted before the version is asked again, ms. */
const CHECK_MS = 100;

/**
 * A process's copy of the active endpoints by project, reloaded whenever the registry's version
 * changes (an endpoint created, deleted or disabled), asked at most every CHECK_MS.
 */
export class EndpointCopy {
  private byProject = new Map<string, Endpoint[]>();
  private version: string | undefined;
  private checkedAt = 0;
  private checking: Promise<void> | undefined;

  constructor(private readonly registry: WebhookRegistry) {}

  /** Brings the copy up to date (one Redis call unless something changed). */
  refresh(now = Date.now()): Promise<void> {
    if (now - this.checkedAt < CHECK_MS) return this.checking ?? Promise.resolve();
    this.checkedAt = now;
    this.checking = this.load().finally(() => (this.checking = undefined));
    return this.checking;
  }

  /** Whether any endpoint of any project is active. */
  get empty(): boolean {
    return this.byProject.size === 0;
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

  private async load(): Promise<void> {
    const version = await this.registry.version();
    if (version === this.version) return;
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
