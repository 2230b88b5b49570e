import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { runEngine } from '../helpers/engine.ts';
import { register, stage, until } from '../helpers/broadcast.ts';
import { call, eventually } from '../helpers/http.ts';

/** Templates (docs/api.md#templates): stored per project over REST and the CLI, sent by template_id. */

const s = await stage(t);
await register(s, 2); // u0 IOS_PUSH, u1 ANDROID_PUSH
const url = `${s.engine.url}/api/templates`;
const token = (user: string): string => s.tokens.get(user) ?? '';

t.test('create, list, get and delete over REST; bad bodies are 400', async (t) => {
  const created = await call(url, 'POST', s.rest, { name: 'welcome', headings: { en: 'Welcome' }, contents: { en: 'Hello {{ first_name | default: "friend" }}' } });
  t.equal(created.status, 201);
  const template = created.body as { id: string };
  t.match(template, { id: /^[0-9a-f-]{36}$/, name: 'welcome', channel: 'PUSH', headings: { en: 'Welcome' }, created_at: String });
  t.same((await call(`${url}/${template.id}`, 'GET', s.rest)).body, template);
  t.same((await call(url, 'GET', s.rest)).body, { templates: [template] });

  const other = await call(url, 'POST', s.rest, { name: 'sms', contents: { en: 'Code' }, channel: 'SMS' });
  t.same([(await call(`${url}/${(other.body as { id: string }).id}`, 'DELETE', s.rest)).status], [200]);
  t.equal((await call(`${url}/${(other.body as { id: string }).id}`, 'GET', s.rest)).status, 404, 'gone');
  t.equal((await call(`${url}/nope`, 'DELETE', s.rest)).status, 404);

  for (const [body, path] of [
    [{ name: 'x' }, '/contents'],
    [{ name: 'x', contents: { fr: 'Salut' } }, '/contents/en'],
    [{ name: 'x', contents: { en: '{% include "secret" %}' } }, '/contents/en'],
    [{ name: 'x', contents: { en: 'x' }, channel: 'FAX' }, '/channel'],
  ] as const) {
    const answer = await call(url, 'POST', s.rest, body);
    t.match([answer.status, answer.body], [400, { errors: [{ path }] }], JSON.stringify(body));
  }
  t.equal((await call(url, 'GET', s.d.project.sdk_key)).status, 403, 'REST keys only');
});

t.test('a notification by template_id gets its texts, filled per user', async (t) => {
  const { templates } = (await call(url, 'GET', s.rest)).body as { templates: { id: string }[] };
  const id = templates[0]?.id ?? '';
  t.equal((await call(`${s.engine.url}/api/sdk/users/u1/tags`, 'PUT', s.d.project.sdk_key, { first_name: 'Ann' })).status, 202);
  await eventually('the tag applied', async () => ((await call(`${s.engine.url}/api/users/u1`, 'GET', s.rest)).body as { tags?: Record<string, unknown> }).tags?.['first_name']);

  const created = await call(`${s.engine.url}/api/notifications`, 'POST', s.rest, { include_external_user_ids: ['u0', 'u1'], template_id: id });
  t.equal(created.status, 201, JSON.stringify(created.body));
  await until(s, (created.body as { id: string }).id);
  t.match((await s.sims.apns.requests()).find((r) => r.path.endsWith(`/${token('u0')}`))?.body, { aps: { alert: { title: 'Welcome', body: 'Hello friend' } } });
  t.match((await s.sims.fcm.requests()).find((r) => JSON.stringify(r.body).includes(token('u1')))?.body, { message: { notification: { title: 'Welcome', body: 'Hello Ann' } } });

  const own = await call(`${s.engine.url}/api/notifications`, 'POST', s.rest, { include_external_user_ids: ['u0'], template_id: id, contents: { en: 'Own text' } });
  t.equal(own.status, 201, "the body's own contents win");
  const unknown = await call(`${s.engine.url}/api/notifications`, 'POST', s.rest, { include_external_user_ids: ['u0'], template_id: 'nope' });
  t.match([unknown.status, unknown.body], [400, { errors: [{ path: '/template_id' }] }]);
  const none = await call(`${s.engine.url}/api/notifications`, 'POST', s.rest, { include_external_user_ids: ['u0'] });
  t.match([none.status, none.body], [400, { errors: [{ path: '/contents' }] }], 'no template, no contents');
});

t.test('the engine templates commands', async (t) => {
  const project = s.d.project.project_id;
  const file = join(t.testdir(), 'template.json');
  writeFileSync(file, JSON.stringify({ name: 'from the CLI', contents: { en: 'Hi {{ external_id }}' }, channel: 'EMAIL' }));
  const created = await runEngine(['templates', 'create', project, '--file', file], s.d.env);
  t.equal(created.code, 0, created.stderr);
  const id = created.stdout.trim();
  t.match((await call(`${url}/${id}`, 'GET', s.rest)).body, { name: 'from the CLI', channel: 'EMAIL' });
  const listed = await runEngine(['templates', 'list', project], s.d.env);
  t.match(listed.stdout, new RegExp(`${id}  EMAIL  from the CLI`));

  writeFileSync(file, JSON.stringify({ name: 'bad', contents: { en: '{{ x | evil }}' } }));
  const bad = await runEngine(['templates', 'create', project, '--file', file], s.d.env);
  t.same([bad.code, /contents\/en: uses the filter evil/.test(bad.stderr)], [1, true], bad.stderr);
  t.equal((await runEngine(['templates', 'delete', project, id], s.d.env)).code, 0);
  t.equal((await call(`${url}/${id}`, 'GET', s.rest)).status, 404);
});
