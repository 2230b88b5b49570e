import { personalErrors } from '../../engine/state/notifications/body.ts';
import { TemplateStore } from '../../engine/state/templates/store.ts';
import { Template, TemplateBody } from '../../schemas/templates.ts';
import { schemaCheck, type Checked } from '../server/checked.ts';
import { httpRoute } from '../server/route.ts';

const schema = schemaCheck<TemplateBody>(TemplateBody);

/** The schema, then placeholders the engine would not fill (docs/api.md#personal-content). */
function checkTemplateBody(value: unknown): Checked<TemplateBody> {
  const checked = schema(value);
  if (!checked.ok) return checked;
  const errors = personalErrors(checked.value);
  return errors.length > 0 ? { ok: false, errors } : checked;
}

export const templatesCreate = httpRoute({
  method: 'post',
  path: '/api/templates',
  auth: 'rest',
  summary: 'Store a notification template; a notification names it by template_id',
  // As for notifications (docs/api.md#limits).
  body: { schema: TemplateBody, limit: 1024 * 1024, check: checkTemplateBody },
  answers: { 201: Template },
  handler: ({ deps }) => {
    const store = new TemplateStore(deps.redis, deps.topology);
    return async ({ ex, caller, body }) => ex.send(201, JSON.stringify(await store.create(caller.project, body)));
  },
});
