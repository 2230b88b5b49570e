import type { Route } from '../server/route.ts';
import { dashboard, dashboardAssets } from './dashboard.ts';
import { deliveriesLive } from './deliveries-live.ts';
import { deliveriesStats } from './deliveries-stats.ts';
import { deliveries } from './deliveries.ts';
import { docsAssets } from './docs-assets.ts';
import { docs } from './docs.ts';
import { events } from './events.ts';
import { healthz } from './healthz.ts';
import { metrics } from './metrics.ts';
import { notificationsCancel } from './notifications-cancel.ts';
import { notificationsCreate } from './notifications-create.ts';
import { notificationsGet } from './notifications-get.ts';
import { notificationsRedrive } from './notifications-redrive.ts';
import { notificationsList } from './notifications-list.ts';
import { openapi } from './openapi.ts';
import { readyz } from './readyz.ts';
import { sdkBatch } from './sdk-batch.ts';
import { sdkEvents } from './sdk-events.ts';
import { sdkOptIn } from './sdk-opt-in.ts';
import { sdkOptOut } from './sdk-opt-out.ts';
import { sdkReceipts } from './sdk-receipts.ts';
import { sdkSubscriptions } from './sdk-subscriptions.ts';
import { sdkTags } from './sdk-tags.ts';
import { sdkUsers } from './sdk-users.ts';
import { sdkSocket } from './sdk-ws.ts';
import { sdkWebPush } from './sdk-web-push.ts';
import { segmentCount } from './segment-count.ts';
import { segmentDelete } from './segment-delete.ts';
import { segmentGet } from './segment-get.ts';
import { segmentsCreate } from './segments-create.ts';
import { segmentsList } from './segments-list.ts';
import { templateDelete } from './template-delete.ts';
import { templateGet } from './template-get.ts';
import { templatesCreate } from './templates-create.ts';
import { templatesList } from './templates-list.ts';
import { usersGet } from './users-get.ts';
import { webSdk, webSdkDemo } from './web-sdk.ts';
import { webhookDelete } from './webhook-delete.ts';
import { webhookGet } from './webhook-get.ts';
import { webhooksCreate } from './webhooks-create.ts';
import { webhooksList } from './webhooks-list.ts';
import { webhookAttempts } from './webhook-attempts.ts';

/** Every route of the gateway, in the order of the API reference. Adding a route: one entry here and its file. */
export const routes: readonly Route[] = [
  sdkUsers,
  sdkSubscriptions,
  sdkTags,
  sdkEvents,
  sdkReceipts,
  sdkBatch,
  sdkOptOut,
  sdkOptIn,
  sdkSocket,
  sdkWebPush,
  usersGet,
  deliveries,
  deliveriesStats,
  deliveriesLive,
  events,
  segmentsCreate,
  segmentsList,
  segmentGet,
  segmentDelete,
  segmentCount,
  notificationsCreate,
  notificationsList,
  notificationsGet,
  notificationsCancel,
  notificationsRedrive,
  templatesCreate,
  templatesList,
  templateGet,
  templateDelete,
  webhooksCreate,
  webhooksList,
  webhookGet,
  webhookDelete,
  webhookAttempts,
  healthz,
  readyz,
  metrics,
  docs,
  docsAssets,
  openapi,
  dashboard,
  dashboardAssets,
  webSdk,
  webSdkDemo,
];
