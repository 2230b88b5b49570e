import t from 'tap';
import { Validators } from '../../gateway/validation.ts';

const v = new Validators();

t.test('regression: thousands of bad values are each listed once (mapping is linear, not quadratic)', async (t) => {
  const tags: Record<string, unknown> = {};
  for (let i = 0; i < 3000; i++) tags[`k${i}`] = i % 2 ? [] : 'x'.repeat(1025);
  const checked = v.identify({ external_id: 'x', tags });
  t.equal(checked.ok, false);
  if (checked.ok) return;
  const paths = checked.errors.map((e) => e.path);
  t.equal(new Set(paths).size, paths.length, 'no path listed twice');
  t.equal(paths.filter((p) => p?.startsWith('/tags/k')).length, 3000, 'every bad value listed');
  t.same(checked.errors.find((e) => e.path === '/tags/k1'), { code: 'validation_failed', message: 'tags/k1: must be string or number', path: '/tags/k1' });
  t.same(checked.errors.find((e) => e.path === '/tags/k0'), {
    code: 'validation_failed',
    message: 'tags/k0: must NOT have more than 1024 characters',
    path: '/tags/k0',
  });
});

t.test('nested anyOf inside a batch operation is summarised once per value', async (t) => {
  const checked = v.batchBody({ operations: [{ op: 'tags', external_id: 'a', tags: { x: {}, y: 'ok' } }, { op: 'identify', external_id: 'b' }] });
  t.equal(checked.ok, false);
  if (checked.ok) return;
  t.same(checked.errors, [{ code: 'validation_failed', message: 'operations/0/tags/x: must be string or number', path: '/operations/0/tags/x' }]);
});
