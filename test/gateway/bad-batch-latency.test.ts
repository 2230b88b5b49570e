import t from 'tap';
import { deployment } from '../helpers/engine.ts';

/**
 * Regression: a 1 MiB batch of 1000 operations with 100 bad tags each was answered with every one
 * of its 100 000 errors (12 MB) after 1.6 s of validation on the event loop; four at once stalled
 * /healthz for seconds. Now an answer lists the first 100 errors and the number of operations
 * that failed, and a bad batch costs about what a good one does.
 */
t.test('four 1 MiB batches full of bad tags: small answers stating the total, /healthz stays fast', async (t) => {
  const d = await deployment(t);
  const gw = await d.start(['gateway']);
  const badTags = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`t${i}`, []]));
  const badTagsBatch = JSON.stringify({ operations: Array.from({ length: 1000 }, (_, i) => ({ op: 'tags', external_id: `u${i}`, tags: badTags })) });
  const tinyOpsBatch = JSON.stringify({ operations: Array.from({ length: 90_000 }, () => ({ tags: 0 })) });
  t.ok(badTagsBatch.length < 1024 * 1024 && tinyOpsBatch.length < 1024 * 1024, 'both under the 1 MiB batch limit');

  const post = async (body: string): Promise<{ status: number; text: string }> => {
    const res = await fetch(`${gw.url}/api/sdk/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${d.project.sdk_key}`, 'content-type': 'application/json' },
      body,
    });
    return { status: res.status, text: await res.text() };
  };
  const healthz = async (): Promise<number> => {
    const started = performance.now();
    const res = await fetch(`${gw.url}/healthz`);
    await res.text();
    return performance.now() - started;
  };
  await healthz();

  for (const [what, body, expected] of [
    ['1000 operations with 100 bad tags each', badTagsBatch, 'operations: 1000 operations failed; only the first 100 errors are listed'],
    ['90 000 operations with invalid tags', tinyOpsBatch, 'operations: must NOT have more than 1000 items'],
  ] as const) {
    let sending = true;
    const latencies: number[] = [];
    const probe = (async () => {
      while (sending) {
        latencies.push(await healthz());
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    const answers = await Promise.all(Array.from({ length: 4 }, () => post(body)));
    sending = false;
    await probe;
    for (const answer of answers) {
      t.equal(answer.status, 400, what);
      t.ok(answer.text.length < 32 * 1024, `${what}: the answer is small (${answer.text.length} bytes)`);
      const errors = (JSON.parse(answer.text) as { errors: { code: string; message: string; path?: string }[] }).errors;
      t.ok(errors.length <= 101, `${what}: at most 100 errors and the total`);
      t.match(errors.at(-1), { code: 'validation_failed', message: expected, path: '/operations' }, what);
    }
    const worst = Math.max(...latencies);
    t.ok(latencies.length > 0 && worst < 1000, `${what}: /healthz answered within ${worst.toFixed(0)} ms (${latencies.length} probes)`);
  }
});
