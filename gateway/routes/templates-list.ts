import { TemplateStore } from '../../engine/state/templates/store.ts';
import { TemplateList } from '../../schemas/templates.ts';
import { httpRoute } from '../server/route.ts';

export const templatesList = httpRoute({
  method: 'get',
  path: '/api/templates',
  auth: 'rest',
  summary: "The project's templates, oldest first",
  answers: { 200: TemplateList },
  handler: ({ deps }) => {
    const store = new TemplateStore(deps.redis, deps.topology);
    return async ({ ex, caller }) => ex.send(200, JSON.stringify({ templates: await store.list(caller.project) }));
  },
});
