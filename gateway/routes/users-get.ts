import { readUser } from '../../engine/state/users/read-user.ts';
import { CallerError } from '../../schemas/errors.ts';
import { UserView } from '../../schemas/users.ts';
import { httpRoute } from '../server/route.ts';
import { UserParams } from './params.ts';

export const usersGet = httpRoute({
  method: 'get',
  path: '/api/users/{external_id}',
  auth: 'rest',
  summary: 'The applied state of a user',
  params: UserParams,
  answers: { 200: UserView },
  errors: ['not_found'],
  handler:
    ({ deps }) =>
    async ({ ex, caller, params }) => {
      const user = await readUser(deps.redis, deps.topology, caller.project, params.external_id);
      if (user === null) throw new CallerError('not_found');
      ex.send(200, JSON.stringify(user));
    },
});
