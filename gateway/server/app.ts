import type { GatewayDeps } from './deps.ts';
import { buildPlan } from './plan.ts';
import type { Route } from './route.ts';

/** A listening gateway server. */
export interface Server {
  /** The port it listens on (PORT 0 picks one). */
  readonly port: number;
  /** Stops listening, then closes every WebSocket (1001 going away); requests in flight finish. */
  close(): void;
}

/**
 * Serves a route table on `host`:`port` with the server deps.server; rejects when it cannot listen
 * there. The chosen implementation alone is imported: uWebSockets.js loads only when it serves.
 */
export async function serve(deps: GatewayDeps, routes: readonly Route[], host: string, port: number): Promise<Server> {
  const plan = buildPlan(deps, routes);
  const listening = deps.server === 'uws' ? await (await import('./uws/serve.ts')).listenUws(plan, host, port) : await (await import('./node/serve.ts')).listenNode(plan, host, port);
  return {
    port: listening.port,
    close: () => {
      listening.close();
      for (const channel of plan.channels) channel.closeAll();
    },
  };
}
