import t from 'tap';
import { fnv1a } from '../../engine/infra/redis/topology.ts';

/** FNV-1a over the UTF-8 of the parts joined by NUL, as the engine has always hashed a partition's key. */
function reference(...parts: string[]): number {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(parts.join('\0'))) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** A random text of `n` UTF-16 units: ASCII, other BMP characters, astral pairs and lone surrogates. */
function text(n: number): string {
  const units: number[] = [];
  while (units.length < n) {
    const pick = Math.random();
    if (pick < 0.6) units.push(0x20 + Math.floor(Math.random() * 0x5f));
    else if (pick < 0.8) units.push(0xa0 + Math.floor(Math.random() * 0xd700));
    else if (pick < 0.95) units.push(0xd800 + Math.floor(Math.random() * 0x400), 0xdc00 + Math.floor(Math.random() * 0x400));
    else units.push(0xd800 + Math.floor(Math.random() * 0x800));
  }
  return String.fromCharCode(...units.slice(0, n));
}

t.test('the published FNV-1a vectors', async (t) => {
  t.equal(fnv1a(''), 0x811c9dc5);
  t.equal(fnv1a('a'), 0xe40c292c);
  t.equal(fnv1a('foobar'), 0xbf9cf968);
});

t.test('the parts hash as their UTF-8 joined by NUL bytes, whatever they hold and however long', async (t) => {
  for (let i = 0; i < 2000; i++) {
    const parts = Array.from({ length: 1 + (i % 3) }, () => text(Math.floor(Math.random() * (i % 100 === 0 ? 1500 : 80))));
    const expected = reference(...parts);
    if (fnv1a(...parts) !== expected) {
      t.fail(`parts ${JSON.stringify(parts)}`);
      return;
    }
  }
  t.equal(fnv1a('project', 'user-1'), reference('project\0user-1'));
  t.equal(fnv1a('p', 'IOS_PUSH', 'tok'), reference('p', 'IOS_PUSH', 'tok'));
});
