import { TemplateStore } from '../../engine/state/templates/store.ts';
import { CallerError } from '../../schemas/errors.ts';
import { Template, TemplateParams } from '../../schemas/templates.ts';
import { httpRoute } from '../server/route.ts';

export const templateDelete = httpRoute({
  method: 'delete',
  path: '/api/templates/{id}',
  auth: 'rest',
  summary: 'Delete a template; answers the deleted template',
  params: TemplateParams,
  answers: { 200: Template },
  errors: ['not_found'],
  handler: ({ deps }) => {
    const store = new TemplateStore(deps.redis, deps.topology);
    return async ({ ex, caller, params }) => {
      const template = await store.delete(caller.project, params.id);
      if (template === null) throw new CallerError('not_found');
      ex.send(200, JSON.stringify(template));
    };
  },
});
