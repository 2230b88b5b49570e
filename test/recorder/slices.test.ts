import t from 'tap';
import { inSlices, SLICE } from '../../actors/recorder/slices.ts';

/** Counts turns of the event loop (a chain of immediates) until stopped. */
function turns(): { count: () => number; stop: () => void } {
  let count = 0;
  let timer = setImmediate(function tick() {
    count++;
    timer = setImmediate(tick);
  });
  return { count: () => count, stop: () => clearImmediate(timer) };
}

t.test('every item once, in order; the event loop turns between slices, never inside one', async (t) => {
  const items = Array.from({ length: SLICE * 3 + 7 }, (_, i) => i);
  const loop = turns();
  const seen: { item: number; turn: number }[] = [];
  await inSlices(items, (item) => seen.push({ item, turn: loop.count() }));
  loop.stop();
  t.same(
    seen.map((s) => s.item),
    items,
  );
  const slices = [0, 1, 2, 3].map((k) => seen.slice(k * SLICE, (k + 1) * SLICE).map((s) => s.turn));
  for (const [k, slice] of slices.entries()) t.equal(new Set(slice).size, 1, `slice ${k} runs within one turn`);
  for (let k = 1; k < slices.length; k++) t.ok((slices[k]?.[0] ?? 0) > (slices[k - 1]?.[0] ?? 0), `the loop turned before slice ${k}`);
});

t.test('no items: nothing is called', async (t) => {
  let calls = 0;
  await inSlices([], () => calls++);
  t.equal(calls, 0);
});
