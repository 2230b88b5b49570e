import { errorItem } from '../../infra/validation/ajv-errors.ts';
import type { TemplateStore } from '../templates/store.ts';
import { CallerError } from '../../../schemas/errors.ts';
import type { NotificationBody } from '../../../schemas/notifications.ts';
import type { DraftBody } from './body.ts';
import { isPersonal } from './personal.ts';

/** A notification's content: the body it is sent with, and whether its texts are filled per user. */
export interface Content {
  body: NotificationBody;
  /** A heading or content holds placeholders to fill per user (./personal.ts). */
  personal: boolean;
}

/**
 * The content a notification is sent with (docs/api.md#templates): with `template_id`, the
 * template's headings, contents and channel where the body gives none. An id the project has no
 * template of is a 400.
 */
export async function resolveContent(store: Pick<TemplateStore, 'get'>, project: string, draft: DraftBody, templateId: string | null): Promise<Content> {
  const body = await withTemplate(store, project, draft, templateId);
  const personal = [...Object.values(body.headings ?? {}), ...Object.values(body.contents)].some(isPersonal);
  return { body, personal };
}

async function withTemplate(store: Pick<TemplateStore, 'get'>, project: string, body: DraftBody, templateId: string | null): Promise<NotificationBody> {
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
