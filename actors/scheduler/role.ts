import { createRedis } from '../../engine/infra/redis/client.ts';
import type { RoleFactory } from '../../engine/infra/runner/roles.ts';
import { Notifications } from '../../engine/state/notifications/lifecycle.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';

/** How often due notifications are looked for, ms: send_after holds to about this. */
const TICK_MS = 200;
/** Most notifications released per tick. */
const BATCH = 100;

/**
 * The `scheduler` role: releases notifications whose send_after has come from the scheduled set
 * onto the notifications log, where fan-out takes them. Any number may run: each release is one
 * atomic script call (engine/state/notifications/lifecycle.ts, release), so a notification is released once.
 */
export const schedulerRole: RoleFactory = async ({ config, log }) => {
  const redis = createRedis(config);
  const notifications = new Notifications(redis, new Topology(config.KEY_PREFIX, config.PARTITIONS));
  let ticking: Promise<void> = Promise.resolve();
  const tick = async (): Promise<void> => {
    try {
      for (;;) {
        if ((await notifications.release(Date.now(), BATCH)) < BATCH) return;
      }
    } catch (err) {
      log.warn('scheduler tick failed', { err });
    }
  };
  const timer = setInterval(() => {
    ticking = ticking.then(tick);
  }, TICK_MS);
  let closing: Promise<void> | undefined;
  return {
    name: 'scheduler',
    close: () =>
      (closing ??= (async () => {
        clearInterval(timer);
        await ticking;
        await redis.quit().catch(() => redis.disconnect());
      })()),
  };
};
