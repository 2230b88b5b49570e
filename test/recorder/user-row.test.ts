import t from 'tap';
import { userRow } from '../../actors/recorder/rows.ts';

const sub = (type: string, state: string) => JSON.stringify({ type, token: `${type}-token`, state, created_at: 1, updated_at: 1, registered_at: 1 });
const record = (entries: [string, string][]) => Object.assign(Object.create(null) as Record<string, string>, Object.fromEntries(entries));

t.test('a users row from the hashes: tag texts and numbers, live types, opt-outs, times, version', async (t) => {
  const row = userRow(
    'p1',
    'u1',
    {
      user: record([['created_at', '1700000000000'], ['updated_at', '1700000000500']]),
      tags: record([['plan', 'sgold'], ['level', 'n7.5'], ['gone', ''], ['__proto__', 'sx']]),
      subs: record([['IOS_PUSH:a', sub('IOS_PUSH', 'live')], ['EMAIL:b', sub('EMAIL', 'retired')], ['SMS:c', 'not json'], ['WEB_PUSH:d', sub('WEB_PUSH', 'live')]]),
      consent: record([['SMS', JSON.stringify({ opted_out: true, at: 5 })], ['EMAIL', JSON.stringify({ opted_out: false, at: 6 })]]),
    },
    '1700000000500-3',
  );
  const { tags, ...rest } = row as { tags: Record<string, string> };
  t.same(Object.entries(tags).sort(), [['__proto__', 'x'], ['level', '7.5'], ['plan', 'gold']], 'tags as text; a tag named __proto__ is a tag');
  t.same(JSON.parse(JSON.stringify(rest)), {
    project: 'p1',
    external_id: 'u1',
    tag_numbers: { level: 7.5 },
    subscription_types: ['IOS_PUSH', 'WEB_PUSH'],
    opted_out: ['SMS'],
    created_at: 1700000000000,
    updated_at: 1700000000500,
    version: '1700000000500000003',
    stream_id: '1700000000500-3',
  });
});

t.test('no user hash: no row; a time that is not a number reads as 0; updated_at defaults to created_at', async (t) => {
  t.equal(userRow('p1', 'u2', { user: record([]), tags: record([]), subs: record([]), consent: record([]) }, '1-0'), null);
  const row = userRow('p1', 'u3', { user: record([['created_at', 'x']]), tags: record([]), subs: record([]), consent: record([]) }, '1-0');
  t.match(row, { created_at: 0, updated_at: 0, tags: {}, subscription_types: [], opted_out: [] });
});
