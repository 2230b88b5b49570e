import t from 'tap';
import { MAX_ERROR_ITEMS } from '../../engine/infra/validation/ajv-errors.ts';
import { IdentifyBody } from '../../schemas/sdk.ts';
import { checkBatch, checkOp } from '../../gateway/ingest/sdk-checks.ts';
import { schemaCheck } from '../../gateway/server/checked.ts';

const checkIdentify = schemaCheck(IdentifyBody);

t.test('hundreds of bad values: the first 100 are listed, each once, then one item with the total', async (t) => {
  const tags: Record<string, unknown> = {};
  for (let i = 0; i < 150; i++) tags[`k${i}`] = i % 2 ? [] : 'x'.repeat(1025);
  const checked = checkIdentify({ external_id: 'x', tags });
  t.equal(checked.ok, false);
  if (checked.ok) return;
  t.equal(checked.errors.length, MAX_ERROR_ITEMS + 1);
  const listed = checked.errors.slice(0, MAX_ERROR_ITEMS).map((e) => e.path);
  t.equal(new Set(listed).size, MAX_ERROR_ITEMS, 'no path listed twice');
  t.same(checked.errors.find((e) => e.path === '/tags/k1'), { code: 'validation_failed', message: 'tags/k1: must be string or number', path: '/tags/k1' });
  t.same(checked.errors.find((e) => e.path === '/tags/k0'), {
    code: 'validation_failed',
    message: 'tags/k0: must NOT have more than 1024 characters',
    path: '/tags/k0',
  });
  t.same(checked.errors.at(-1), { code: 'validation_failed', message: 'body: 150 errors; only the first 100 are listed', path: '' });
});

t.test('regression: a value far past every limit is checked up to its first error (90 000 bad tags took 1.1 s)', async (t) => {
  const tags: Record<string, unknown> = {};
  for (let i = 0; i < 90_000; i++) tags[`k${i}`] = [];
  const started = performance.now();
  const checked = checkOp({ op: 'tags', external_id: 'x', tags }, '/operations/0');
  const ms = performance.now() - started;
  t.same(checked, { ok: false, errors: [{ code: 'validation_failed', message: 'operations/0/tags: must NOT have more than 200 properties', path: '/operations/0/tags' }] });
  t.ok(ms < 250, `checked in ${ms.toFixed(1)} ms`);
});

t.test('nested anyOf inside a batch operation is summarised once per value', async (t) => {
  const checked = checkBatch({ operations: [{ op: 'tags', external_id: 'a', tags: { x: {}, y: 'ok' } }, { op: 'identify', external_id: 'b' }] });
  t.equal(checked.ok, false);
  if (checked.ok) return;
  t.same(checked.errors, [{ code: 'validation_failed', message: 'operations/0/tags/x: must be string or number', path: '/operations/0/tags/x' }]);
});

t.test('a batch lists the first 100 errors and says how many operations failed in all', async (t) => {
  const bad = Object.fromEntries(Array.from({ length: 3 }, (_, i) => [`t${i}`, []]));
  const operations = Array.from({ length: 1000 }, (_, i) => (i % 4 === 3 ? { op: 'identify', external_id: `ok${i}` } : { op: 'tags', external_id: `u${i}`, tags: bad }));
  const checked = checkBatch({ operations });
  t.equal(checked.ok, false);
  if (checked.ok) return;
  t.equal(checked.errors.length, MAX_ERROR_ITEMS + 1);
  t.same(checked.errors[0], { code: 'validation_failed', message: 'operations/0/tags/t0: must be string or number', path: '/operations/0/tags/t0' });
  t.same(checked.errors[MAX_ERROR_ITEMS - 1]?.path, '/operations/44/tags/t0', 'three per failed operation, the valid ones skipped');
  t.same(checked.errors.at(-1), {
    code: 'validation_failed',
    message: 'operations: 750 operations failed; only the first 100 errors are listed',
    path: '/operations',
  });
});

t.test('regression: a batch over 1000 operations is refused by its count, before any operation is checked', async (t) => {
  const operations = Array.from({ length: 100_000 }, () => ({ op: 'tags', external_id: 'u', tags: { a: [] } }));
  const started = performance.now();
  const checked = checkBatch({ operations });
  const ms = performance.now() - started;
  t.same(checked, { ok: false, errors: [{ code: 'validation_failed', message: 'operations: must NOT have more than 1000 items', path: '/operations' }] });
  t.ok(ms < 100, `refused in ${ms.toFixed(1)} ms`);
  t.same(checkBatch({ operations: [], extra: 1 }), {
    ok: false,
    errors: [
      { code: 'validation_failed', message: 'extra: is not allowed', path: '/extra' },
      { code: 'validation_failed', message: 'operations: must NOT have fewer than 1 items', path: '/operations' },
    ],
  });
});
