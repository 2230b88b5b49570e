import t from 'tap';
import { contracts, scriptFiles } from '../../engine/infra/scripts/registry.ts';
import { ApplyCode } from '../../engine/infra/scripts/apply-batch.ts';
import type { AnyContract } from '../../engine/infra/scripts/contract.ts';
import { headerProblems, parseHeader, scriptProblems } from '../../engine/infra/scripts/header.ts';

const files = scriptFiles();
const source = (file: string): string => files.get(file) ?? '';
const contract = (name: string): AnyContract => {
  const found = contracts.find((c) => c.name === name);
  if (!found) throw new Error(`no contract ${name}`);
  return found;
};
const apply = contract('applyBatch');
const settle = contract('settleBatch');

t.test('every script file has a declaration, every declaration a file, and each header agrees', async (t) => {
  t.ok(files.size >= 7, 'the scripts of engine/infra/scripts/lua are read');
  t.same(scriptProblems(files, contracts), []);
});

t.test('headers parse into named KEYS and ARGV, the trailing list and the reply fields', async (t) => {
  t.same(parseHeader(source('settleBatch-2.lua')), {
    shebang: '#!lua flags=allow-oom',
    keys: [
      { index: 1, name: 'stream' },
      { index: 2, name: 'marks' },
    ],
    args: [
      { index: 1, name: 'group' },
      { index: 2, name: 'lastId' },
      { index: 3, name: 'kind' },
      { index: 4, name: 'token' },
    ],
    variadic: { first: 5, name: 'ids', item: [] },
    returns: ['pending', 'trimmedTo'],
  });
  t.same(parseHeader(source('applyBatch-n.lua')).variadic, { first: 10, name: 'entries', item: ['id', 'json'] });
  t.same(parseHeader(source('applyBatch-n.lua')).keyList, { name: 'partitions', item: ['lease', 'applied', 'ingest', 'changes', 'outbox'] });
});

t.test('a declaration that disagrees with its header is refused', async (t) => {
  const item = [...(apply.keyList?.item ?? [])];
  [item[1], item[2]] = [item[2] ?? '', item[1] ?? ''];
  t.match(headerProblems('applyBatch-n.lua', source('applyBatch-n.lua'), { ...apply, keyList: { name: 'partitions', item } }), [
    /key list: header partitions \{lease, applied, ingest, changes, outbox\}, declared partitions \{lease, ingest, applied/,
  ]);
  t.match(headerProblems('applyBatch-5.lua', source('applyBatch-n.lua'), apply), [/file name says 5 keys, declared key list partitions needs -n/]);
  t.match(headerProblems('applyBatch-n.lua', source('applyBatch-n.lua'), { ...apply, args: apply.args.slice(0, -1) }), [
    /ARGV: header lists/,
    /variadic ARGV starts at 10, declared after ARGV\[8\]/,
  ]);
  t.match(headerProblems('applyBatch-n.lua', source('applyBatch-n.lua'), { ...apply, variadic: { name: 'entries' } }), [/item: header \{id, json\}, declared \{\}/]);
  const withoutIds = { name: settle.name, keys: settle.keys, args: settle.args, oom: settle.oom, reply: settle.reply };
  t.match(headerProblems('settleBatch-2.lua', source('settleBatch-2.lua'), withoutIds), [/ids from 5, none declared/]);
  t.match(headerProblems('settleBatch-2.lua', source('settleBatch-2.lua'), { ...settle, reply: { fields: ['trimmedTo', 'pending'] } }), [/reply: header returns \{pending, trimmedTo\}/]);
  t.match(headerProblems('settleBatch-2.lua', source('settleBatch-2.lua'), { ...settle, keys: ['stream'] }), [
    /file name says 2 keys, declared 1/,
    /KEYS: header lists \[stream, marks\], declared \[stream\]/,
  ]);
});

t.test('a header that disagrees with its declaration is refused', async (t) => {
  const real = source('setIfAbsent-1.lua');
  const swapped = real.replace('ARGV[1] value ', 'ARGV[1] ttlMs ').replace('ARGV[2] ttlMs ', 'ARGV[2] value ');
  t.not(swapped, real, 'the header text was changed');
  t.match(headerProblems('setIfAbsent-1.lua', swapped, contract('setIfAbsent')), [/ARGV: header lists \[ttlMs, value\], declared \[value, ttlMs\]/]);
  const gap = real.replace('ARGV[2] ttlMs', 'ARGV[3] ttlMs');
  t.match(headerProblems('setIfAbsent-1.lua', gap, contract('setIfAbsent')), [/ARGV\[3\] is listed where ARGV\[2\] belongs/]);
  t.match(headerProblems('setIfAbsent-2.lua', real, contract('setIfAbsent')), [/file name says 2 keys, declared 1/]);
});

t.test('a key list: its header, its -n file name, and each disagreement refused', async (t) => {
  const list = contract('loadRecipients');
  const lua = source('loadRecipients-n.lua');
  t.same(parseHeader(lua).keyList, { name: 'users', item: ['user', 'canceled'] });
  t.same(parseHeader(lua).keys, [], 'no fixed KEYS');
  t.same(headerProblems('loadRecipients-n.lua', lua, list), []);
  t.match(headerProblems('loadRecipients-4.lua', lua, list), [/file name says 4 keys, declared key list users needs -n/]);
  t.match(headerProblems('loadRecipients-n.lua', lua, { ...list, keyList: { name: 'users', item: ['user'] } }), [/key list: header users \{user, canceled\}, declared users \{user\}/]);
  const withoutList = { name: list.name, keys: list.keys, args: list.args, oom: list.oom, reply: list.reply };
  t.match(headerProblems('loadRecipients-n.lua', lua, withoutList), [/file name says n keys, declared 0/, /header lists KEYS users, no key list declared/]);
  const single = contract('takeCapSlot');
  t.match(headerProblems('takeCapSlot-n.lua', source('takeCapSlot-1.lua'), { ...single, keyList: { name: 'users', item: ['user'] } }), [
    /a script with a key list names no other KEYS/,
    /declared key list users is not in the header/,
  ]);
});

t.test('a script without a declaration, or a declaration without a script, is refused', async (t) => {
  const extra = new Map([...files, ['dropUser-1.lua', '--[[\n  KEYS[1] user  user:{pN}\n]]\n']]);
  t.same(scriptProblems(extra, contracts), ['dropUser-1.lua: no declaration in engine/infra/scripts']);
  const missing = new Map([...files].filter(([f]) => f !== 'takeToken-1.lua'));
  t.same(scriptProblems(missing, contracts), ['takeToken: declared, but engine/infra/scripts/lua has no takeToken-<keys>.lua']);
});

t.test('applyBatch: its Lua code constants are ApplyCode, and entries start right after the declared ARGV', async (t) => {
  const lua = source('applyBatch-n.lua');
  const codes = /^local ([A-Z_, ]+) = ([\d, ]+)$/m.exec(lua);
  const names = (codes?.[1] ?? '').split(', ').map((n) => n.toLowerCase().replace(/(^|_)(\w)/g, (_, _s: string, c: string) => c.toUpperCase()));
  const values = (codes?.[2] ?? '').split(', ').map(Number);
  t.same(Object.fromEntries(names.map((n, i) => [n, values[i]])), { Ok: ApplyCode.Ok, NotOwner: ApplyCode.NotOwner, Gap: ApplyCode.Gap });
  t.match(lua, new RegExp(`^local FIRST_ENTRY = ${apply.args.length + 1}$`, 'm'));
});

t.test('a script whose first line disagrees with its declared oom policy is refused', async (t) => {
  const real = source('settleBatch-2.lua');
  t.same(parseHeader(real).shebang, '#!lua flags=allow-oom');
  t.match(headerProblems('settleBatch-2.lua', real.replace('#!lua flags=allow-oom', '#!lua'), settle), [/first line is "#!lua", declared oom 'allow' needs "#!lua flags=allow-oom"/]);
  t.match(headerProblems('settleBatch-2.lua', real.replace('#!lua flags=allow-oom\n', ''), settle), [/first line is "", declared oom 'allow'/]);
  t.same(headerProblems('settleBatch-2.lua', real, settle), []);
});
