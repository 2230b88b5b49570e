import { errorItem } from '../../infra/validation/ajv-errors.ts';
import type { TemplateStore } from '../templates/store.ts';
import { CallerError } from '../../../schemas/errors.ts';
import type { NotificationBody } from '../../../schemas/notifications.ts';
import type { DraftBody } from './body.ts';

/**
 * The body a notification is sent with (docs/api.md#templates): with `template_id`, the
 * template's headings, contents and channel where the body gives none. An id the project has no
 * template of is a 400.
 */
export async function withTemplate(store: TemplateStore, project: string, body: DraftBody, templateId: string | null): Promise<NotificationBody> {
  if (templateId === null) return body as NotificationBody;
  const template = await store.get(project, templateId);
  if (template === null) throw new CallerError('validation_failed', [errorItem('/template_id', 'names no template of this project')]);
  return {
    ...body,
    contents: body.contents ?? (template.contents as NotificationBody['contents']),
    ...(body.headings === undefined && template.headings !== null ? { headings: template.headings } : {}),
    channel: body.channel ?? template.channel,
  };
}
