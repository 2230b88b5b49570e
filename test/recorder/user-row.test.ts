import t from 'tap';
import { Packr } from 'msgpackr';
import { summaryOfHashes, userRow } from '../../actors/recorder/rows.ts';
import { decodeUserRecord, summaryOfRecord } from '../../engine/state/users/user-record.ts';

const sub = (type: string, state: string) => JSON.stringify({ type, token: `${type}-token`, state, created_at: 1, updated_at: 1, registered_at: 1 });
const record = (entries: [string, string][]) => Object.assign(Object.create(null) as Record<string, string>, Object.fromEntries(entries));

t.test('a users row from the hashes: tag texts and numbers, live types, opt-outs, times, version', async (t) => {
  const row = userRow(
    'p1',
    'u1',
    summaryOfHashes({
      user: record([['created_at', '1700000000000'], ['updated_at', '1700000000500']]),
      tags: record([['plan', 'sgold'], ['level', 'n7.5'], ['gone', ''], ['__proto__', 'sx']]),
      subs: record([['IOS_PUSH:a', sub('IOS_PUSH', 'live')], ['EMAIL:b', sub('EMAIL', 'retired')], ['SMS:c', 'not json'], ['WEB_PUSH:d', sub('WEB_PUSH', 'live')]]),
      consent: record([['SMS', JSON.stringify({ opted_out: true, at: 5 })], ['EMAIL', JSON.stringify({ opted_out: false, at: 6 })]]),
    }),
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
  t.equal(userRow('p1', 'u2', summaryOfHashes({ user: record([]), tags: record([]), subs: record([]), consent: record([]) }), '1-0'), null);
  const row = userRow('p1', 'u3', summaryOfHashes({ user: record([['created_at', 'x']]), tags: record([]), subs: record([]), consent: record([]) }), '1-0');
  t.match(row, { created_at: 0, updated_at: 0, tags: {}, subscription_types: [], opted_out: [] });
});

/** A record as the apply's Lua packs it: tables as maps, an empty table as an empty array. */
const packr = new Packr({ useRecords: false });
const pack = (entries: [string, unknown][]): Buffer => packr.pack(new Map(entries));

t.test('a record gives the row its hashes would: read straight, not through their JSON', async (t) => {
  const records = [
    pack([
      ['c', 1700000000000],
      ['u', 1700000000500],
      ['t', new Map([['plan', 'sgold'], ['level', 'n7.5'], ['gone', ''], ['__proto__', 'sx']])],
      ['s', new Map<string, unknown[]>([['IOS_PUSH:a', [0, 1, 2, 3, 'iPhone']], ['EMAIL:b', [1, 1, 2, 3]], ['WEB_PUSH:https://x/y:z', [0, 1, 2, 3]], ['IOS_PUSH:c', [0, 4, 5, 6]]])],
      ['o', new Map<string, unknown[]>([['SMS', [true, 5]], ['EMAIL', [false, 6]]])],
    ]),
    pack([['c', 1700000000000], ['t', []], ['s', []], ['o', []]]),
    pack([['t', new Map([['plan', 'sgold']])]]),
  ];
  for (const [i, packed] of records.entries()) {
    const direct = userRow('p1', 'u1', summaryOfRecord(packed), '1700000000500-3');
    const viaHashes = userRow('p1', 'u1', summaryOfHashes(decodeUserRecord(packed)), '1700000000500-3');
    t.same(JSON.parse(JSON.stringify(direct)), JSON.parse(JSON.stringify(viaHashes)), `record ${i}: the same row`);
  }
  t.match(userRow('p1', 'u1', summaryOfRecord(records[0] as Buffer), '1-0'), { subscription_types: ['IOS_PUSH', 'WEB_PUSH'], opted_out: ['SMS'], tag_numbers: { level: 7.5 } });
  t.equal(summaryOfRecord(records[2] as Buffer), null, 'no creation time: no user');
});
