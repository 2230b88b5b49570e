import { defineCommand } from './command.ts';

/** `engine webhooks create <project_id> --url <url> --events <type,...> [--secret whsec_...]`. */
export const webhooksCreate = defineCommand({
  path: ['webhooks', 'create'],
  args: [{ name: 'project_id' }],
  options: {
    url: { kind: 'string', value: '<url>', required: true, help: 'the receiver: http or https, checked as POST /api/webhooks checks it' },
    events: { kind: 'string', value: '<type,...>', required: true, help: 'comma-separated event types (delivery.sent, receipt.opened, …)' },
    secret: { kind: 'string', value: '<whsec_...>', help: 'the signing secret (default: a new random one)' },
  },
  summary: 'Registers a webhook endpoint for a project; prints it as JSON, with its secret.',
  run: async (config, { args, options }) =>
    (await import('./actions/webhooks.ts')).createWebhook(config, args.project_id, { url: options.url, events: options.events, secret: options.secret }),
});

/** `engine webhooks list <project_id>`. */
export const webhooksList = defineCommand({
  path: ['webhooks', 'list'],
  args: [{ name: 'project_id' }],
  options: {},
  summary: "Prints a project's webhook endpoints with their health as JSON, as GET /api/webhooks answers.",
  run: async (config, { args }) => (await import('./actions/webhooks.ts')).listWebhooks(config, args.project_id),
});

/** `engine webhooks get <project_id> <webhook_id>`. */
export const webhooksGet = defineCommand({
  path: ['webhooks', 'get'],
  args: [{ name: 'project_id' }, { name: 'webhook_id' }],
  options: {},
  summary: 'Prints one webhook endpoint with its health as JSON.',
  run: async (config, { args }) => (await import('./actions/webhooks.ts')).getWebhook(config, args.project_id, args.webhook_id),
});

/** `engine webhooks delete <project_id> <webhook_id>`. */
export const webhooksDelete = defineCommand({
  path: ['webhooks', 'delete'],
  args: [{ name: 'project_id' }, { name: 'webhook_id' }],
  options: {},
  summary: 'Deletes a webhook endpoint and its queued events; prints it as JSON.',
  run: async (config, { args }) => (await import('./actions/webhooks.ts')).deleteWebhook(config, args.project_id, args.webhook_id),
});
