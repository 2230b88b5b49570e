// Counts the assertions of a tap run's raw TAP (standard input) per test file, as tap itself
// counts them in its closing `# { total: … }` line: tap-parser's `result` events, every test
// point at any depth but the procedural points that only close a subtest. Prints one line a
// file, `<file>\t<passed>\t<failed>\t<skipped>\t<todo>`, in the order files first counted.
// Given a path, it also writes there one line a failed assertion, `<file>\t<its subtests and
// name>`, so that CI's closing lines can say which failed.
// A file that timed out is the runner's `timeout!` point, whose YAML names it (`expired:`); a
// file whose own root timed out (a handle kept it alive) names its root, `TAP`, inside the file's
// subtest, which names the file.
import { writeFileSync } from 'node:fs';
import process from 'node:process';
import { Parser } from 'tap-parser';

const counts = new Map();
const failures = [];
const parser = new Parser();
parser.on('result', (res) => {
  const expired = res.diag?.expired;
  const file = typeof expired === 'string' && expired !== 'TAP' ? expired : res.fullname.split(' ')[0] || res.name || '(no file)';
  const row = counts.get(file) ?? { pass: 0, fail: 0, skip: 0, todo: 0 };
  const kind = res.todo ? 'todo' : res.skip ? 'skip' : res.ok ? 'pass' : 'fail';
  row[kind]++;
  counts.set(file, row);
  // tap-parser names a point by its subtests and its own name, joined by ' > ', the file first.
  if (kind === 'fail') failures.push(`${file}\t${res.fullname.startsWith(`${file} > `) ? res.fullname.slice(file.length + 3) : res.fullname || res.name}`);
});
parser.on('complete', () => {
  if (process.argv[2]) writeFileSync(process.argv[2], failures.map((f) => `${f}\n`).join(''));
  for (const [file, c] of counts) process.stdout.write(`${file}\t${c.pass}\t${c.fail}\t${c.skip}\t${c.todo}\n`);
});
process.stdin.pipe(parser);
