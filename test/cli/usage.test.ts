import t from 'tap';
import { runEngine, testEnv } from '../helpers/engine.ts';
import { testPrefix } from '../helpers/redis.ts';

// None of these reach Redis: the prefix only guards against a stray write.
const env = testEnv(testPrefix());

const badInvocations: [string, string[], RegExp][] = [
  ['an unknown command', ['launch'], /unknown command "launch"/],
  ['keys create without --type', ['keys', 'create', 'p1'], /--type sdk\|rest/],
  ['keys create with a bad --type', ['keys', 'create', 'p1', '--type', 'admin'], /--type sdk\|rest/],
  ['project update without on|off', ['project', 'update', 'p1', '--identity-verification', 'maybe'], /on\|off/],
  ['project with no action', ['project'], /project needs/],
  ['an unknown flag', ['keys', 'list', 'p1', '--secret'], /--secret/],
  ['start with an unknown role', ['start', '--roles', 'gateway,mailer'], /unknown role "mailer"/],
  ['start with a bad port', ['start', '--port', 'eighty'], /--port must be a number/],
];

t.test('bad invocations exit 2 with a message and the usage', async (t) => {
  // Each run is a separate process doing no I/O; running them together keeps the suite short.
  const results = await Promise.all(badInvocations.map(([, args]) => runEngine(args, env)));
  badInvocations.forEach(([what, , message], i) => {
    const result = results[i];
    t.equal(result?.code, 2, `${what}: exit status`);
    t.match(result?.stderr, message, `${what}: names the mistake`);
    t.match(result?.stderr, /usage:/, `${what}: prints the usage`);
    t.equal(result?.stdout, '', `${what}: prints nothing on stdout`);
  });
});

t.test('a bad environment value stops the command with a message naming the variable', async (t) => {
  const { code, stderr } = await runEngine(['keys', 'list', 'p1'], { ...env, PARTITIONS: 'abc' });
  t.equal(code, 2);
  t.match(stderr, /PARTITIONS="abc"/);
});

t.test('a bad environment value stops start before any role runs', async (t) => {
  const { code, stdout, stderr } = await runEngine(['start', '--port', '0'], { ...env, REDIS_URL: 'http://nowhere' });
  t.equal(code, 2);
  t.match(stderr, /REDIS_URL/);
  t.notMatch(stdout, /started/);
});

t.test('help prints the usage and exits 0', async (t) => {
  const { code, stdout } = await runEngine(['help'], env);
  t.equal(code, 0);
  t.match(stdout, /engine project create <name>/);
});
