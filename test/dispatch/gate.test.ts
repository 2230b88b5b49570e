import t from 'tap';
import { Gate } from '../../actors/dispatch/gate.ts';

t.test('a gate lends at most its size, taken at once or in arrival order once released', async (t) => {
  const gate = new Gate(2);
  const first = gate.tryAcquire();
  const second = await gate.acquire();
  t.ok(first, 'a free slot is taken at once');
  t.equal(gate.tryAcquire(), null, 'none is free: nothing is taken');
  const order: string[] = [];
  const a = gate.acquire().then((release) => (order.push('a'), release));
  const b = gate.acquire().then((release) => (order.push('b'), release));
  first?.();
  first?.();
  const releaseA = await a;
  t.same(order, ['a'], 'a release hands its slot to the first waiter, once');
  t.equal(gate.tryAcquire(), null, 'the handed slot is not free for anyone else');
  second();
  const releaseB = await b;
  t.same(order, ['a', 'b']);
  releaseA();
  releaseB();
  t.ok(gate.idle, 'every slot back');
  t.ok(gate.tryAcquire(), 'and free again');
});
