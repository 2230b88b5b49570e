import { defineCommand } from './command.ts';

/** `engine webhooks create --project <project_id> --url <url> --events <type,...> [--secret whsec_...]`. */
export const webhooksCreate = defineCommand({
  path: ['webhooks', 'create'],
  args: [],
  options: {
    project: { kind: 'string', value: '<project_id>', required: true, help: 'the project whose events the endpoint receives' },
    url: { kind: 'string', value: '<url>', required: true, help: 'the receiver: http or https, checked as POST /api/webhooks checks it' },
    events: { kind: 'string', value: '<type,...>', required: true, help: 'comma-separated event types (delivery.sent, receipt.opened, …)' },
    secret: { kind: 'string', value: '<whsec_...>', help: 'the signing secret (default: a new random one)' },
  },
  summary: 'Registers a webhook endpoint for a project; prints it as JSON, with its secret.',
  run: async (config, { options }) =>
    (await import('./actions/webhooks.ts')).createWebhook(config, options.project, { url: options.url, events: options.events, secret: options.secret }),
});

/** `engine webhooks list --project <project_id>`. */
export const webhooksList = defineCommand({
  path: ['webhooks', 'list'],
  args: [],
  options: { project: { kind: 'string', value: '<project_id>', required: true, help: 'the project whose endpoints are listed' } },
  summary: "Prints a project's webhook endpoints with their health as JSON, as GET /api/webhooks answers.",
  run: async (config, { options }) => (await import('./actions/webhooks.ts')).listWebhooks(config, options.project),
});

/** `engine webhooks get --project <project_id> <webhook_id>`. */
export const webhooksGet = defineCommand({
  path: ['webhooks', 'get'],
  args: [{ name: 'webhook_id' }],
  options: { project: { kind: 'string', value: '<project_id>', required: true, help: 'the project the endpoint belongs to' } },
  summary: 'Prints one webhook endpoint with its health as JSON.',
  run: async (config, { args, options }) => (await import('./actions/webhooks.ts')).getWebhook(config, options.project, args.webhook_id),
});

/** `engine webhooks delete --project <project_id> <webhook_id>`. */
export const webhooksDelete = defineCommand({
  path: ['webhooks', 'delete'],
  args: [{ name: 'webhook_id' }],
  options: { project: { kind: 'string', value: '<project_id>', required: true, help: 'the project the endpoint belongs to' } },
  summary: 'Deletes a webhook endpoint and its queued events; prints it as JSON.',
  run: async (config, { args, options }) => (await import('./actions/webhooks.ts')).deleteWebhook(config, options.project, args.webhook_id),
});
