// Loaded before `engine start` with `node --import <this file>` (plain JavaScript, as it also runs
// the build). When the process writes its `started` line, it writes another first: how many
// SIGTERM listeners the process has at that moment, as a log line of its own
// ({"msg":"sigterm listeners","count":N}). A supervisor may signal the process on reading
// `started`, so by then the process must be listening.
import process from 'node:process';

const write = process.stderr.write.bind(process.stderr);
let told = false;
process.stderr.write = (chunk, ...rest) => {
  if (!told && String(chunk).includes('"msg":"started"')) {
    told = true;
    write(`${JSON.stringify({ msg: 'sigterm listeners', count: process.listenerCount('SIGTERM') })}\n`);
  }
  return write(chunk, ...rest);
};
