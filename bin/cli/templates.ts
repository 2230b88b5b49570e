import { defineCommand } from './command.ts';

/** `engine templates create <project_id> --file <template.json>`. */
export const templatesCreate = defineCommand({
  path: ['templates', 'create'],
  args: [{ name: 'project_id' }],
  options: {
    file: { kind: 'string', value: '<template.json>', required: true, help: 'the template: {"name", "headings", "contents", "channel"} as POST /api/templates takes it' },
  },
  summary: 'Stores a notification template for a project; prints its id.',
  run: async (config, { args, options }) => (await import('./actions/templates.ts')).createTemplate(config, args.project_id, options.file),
});

/** `engine templates list <project_id>`. */
export const templatesList = defineCommand({
  path: ['templates', 'list'],
  args: [{ name: 'project_id' }],
  options: {},
  summary: "Lists a project's templates: id, channel, name.",
  run: async (config, { args }) => (await import('./actions/templates.ts')).listTemplates(config, args.project_id),
});

/** `engine templates delete <project_id> <template_id>`. */
export const templatesDelete = defineCommand({
  path: ['templates', 'delete'],
  args: [{ name: 'project_id' }, { name: 'template_id' }],
  options: {},
  summary: 'Deletes a template; notifications already created keep their texts.',
  run: async (config, { args }) => (await import('./actions/templates.ts')).deleteTemplate(config, args.project_id, args.template_id),
});
