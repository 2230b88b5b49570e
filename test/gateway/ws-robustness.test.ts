import { createHmac } from 'node:crypto';
import type { Socket } from 'node:net';
import t from 'tap';
import WebSocket from 'ws';
import type { Test } from 'tap';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { Keystore, type CreatedProject } from '../../engine/state/keys/keystore.ts';
import { createRedis } from '../../engine/infra/redis/client.ts';
import { Topology } from '../../engine/infra/redis/topology.ts';
import { MAX_BACKPRESSURE } from '../../gateway/server/socket.ts';
import { AnswerQueue, SEND_HIGH_WATER, type AnswerSocket } from '../../gateway/ws/answer-queue.ts';
import { deployment } from '../helpers/engine.ts';
import { entriesOf } from './support.ts';

/** Regression tests of the WebSocket channel: key changes on open sockets, slow readers, floods, big frames. */

interface Answer {
  seq: number | null;
  accepted?: true;
  errors?: { code: string; message: string; path?: string }[];
}

interface Client {
  ws: WebSocket;
  answers: Answer[];
  /** Resolves with the close code. */
  closed: Promise<number>;
  /** The underlying TCP socket: pausing it stops reading, as a slow client would. */
  socket: Socket;
}

async function open(port: number, key: string): Promise<Client> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/api/sdk/ws`, [`bearer.${key}`]);
  const answers: Answer[] = [];
  ws.on('message', (data: Buffer) => answers.push(JSON.parse(data.toString()) as Answer));
  const closed = new Promise<number>((resolve) => ws.once('close', (code: number) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return { ws, answers, closed, socket: (ws as unknown as { _socket: Socket })._socket };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `done` every 50 ms until it holds; fails after `ms`. */
async function until(what: string, done: () => boolean | Promise<boolean>, ms = 15000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** Sends one frame every 100 ms until an answer matches; docs/api.md#keys-and-projects allows 5 s, plus slack for a loaded machine. */
async function sendUntil(client: Client, frame: (seq: number) => object, matches: (a: Answer) => boolean): Promise<number> {
  let seq = client.answers.length;
  const deadline = Date.now() + 8000;
  while (!client.answers.some(matches)) {
    if (Date.now() > deadline) throw new Error('the change was not seen in time');
    if (client.ws.readyState === WebSocket.OPEN) client.ws.send(JSON.stringify(frame(++seq)));
    await sleep(100);
  }
  return seq;
}

function seqs(answers: Answer[]): (number | null)[] {
  return answers.map((a) => a.seq);
}

// One gateway for the file; each test has a project of its own. Key changes are seen within
// KEY_CACHE_MS: a short one keeps the tests that wait for them short.
const d = await deployment(t);
const gw = await d.start(['gateway'], { KEY_CACHE_MS: '500' });

/** The deployment's keystore, as `engine keys` uses it. */
function keystore(t: Test): Keystore {
  const config = loadConfig(d.env);
  const redis = createRedis(config);
  t.teardown(() => redis.disconnect());
  return new Keystore(redis, new Topology(config.KEY_PREFIX, config.PARTITIONS));
}

/** How many ingest entries of `externalId` the log holds. */
async function logged(project: CreatedProject, externalId: string): Promise<number> {
  return (await entriesOf(d.prefix, project.project_id, externalId)).length;
}

t.test('revoking the key: the open socket answers invalid_key within the cache time, then closes with 1008', async (t) => {
  const project = await d.createProject();
  const client = await open(gw.port, project.sdk_key);
  t.teardown(() => client.ws.terminate());
  const event = (seq: number): object => ({ seq, op: 'event', external_id: 'rev', name: 'n' });
  client.ws.send(JSON.stringify(event(1)));
  await until('the first answer', () => client.answers.length === 1);

  t.equal(await keystore(t).revokeKey(project.sdk_key), true);
  await sendUntil(client, event, (a) => a.errors?.[0]?.code === 'invalid_key');

  t.equal(await client.closed, 1008, 'closed as a policy violation');
  const answers = client.answers;
  const first = answers.findIndex((a) => a.errors !== undefined);
  t.same(seqs(answers), answers.map((_, i) => i + 1), 'every frame up to the close answered once, in order');
  t.ok(answers.slice(0, first).every((a) => a.accepted === true), 'accepted until the revocation was seen');
  t.same(answers.slice(first), answers.slice(first).map((a) => ({ seq: a.seq, errors: [{ code: 'invalid_key', message: 'The key is unknown or revoked.' }] })));
});

t.test('turning identity verification on applies to an open socket', async (t) => {
  const project = await d.createProject();
  const client = await open(gw.port, project.sdk_key);
  t.teardown(() => client.ws.terminate());
  client.ws.send(JSON.stringify({ seq: 1, op: 'event', external_id: 'idv', name: 'n' }));
  await until('the first answer', () => client.answers.length === 1);
  t.same(client.answers, [{ seq: 1, accepted: true }]);

  t.equal(await keystore(t).setIdentityVerification(project.project_id, true), true);
  const last = await sendUntil(
    client,
    (seq) => ({ seq, op: 'event', external_id: 'idv', name: 'n' }),
    (a) => a.errors?.[0]?.code === 'identity_verification_failed',
  );
  await until('every answer', () => client.answers.length === last);
  const hash = createHmac('sha256', project.identity_secret).update('idv').digest('hex');
  client.ws.send(JSON.stringify({ seq: last + 1, op: 'event', external_id: 'idv', name: 'n', identity_hash: hash }));
  await until('the signed answer', () => client.answers.length === last + 1);
  t.same(client.answers.at(-1), { seq: last + 1, accepted: true }, 'a signed operation still goes through');
  t.same(client.answers.at(-2), {
    seq: last,
    errors: [{ code: 'identity_verification_failed', message: 'identity_hash is missing or does not match external_id.', path: '/identity_hash' }],
  });
  t.equal(client.ws.readyState, WebSocket.OPEN, 'the socket stays open');
});

t.test('a client that stops reading loses no answer: they wait and go out in order once it reads', async (t) => {
  const project = await d.createProject();
  const client = await open(gw.port, project.sdk_key);
  t.teardown(() => client.ws.terminate());
  // Each bad frame (61 KB, 120 unknown fields of 500 characters) is answered with its first 100
  // violations and their total, ~105 KB: the 60 of them pass what the kernel buffers on loopback
  // (about 4 MB) and what uWS may buffer.
  const unknownFields = Object.fromEntries(Array.from({ length: 120 }, (_, i) => [`x${i}`.padEnd(500, 'x'), 0]));
  const rounds = 15;
  const perRound = 50;
  const total = rounds * perRound;
  const badPerRound = 4;
  const isBad = (seq: number): boolean => seq % perRound % 10 === 5 && seq % perRound < 40;
  client.socket.pause();
  // Round by round, each waiting for its appends, so answers pile up only because nobody reads.
  for (let round = 0; round < rounds; round++) {
    for (let seq = round * perRound + 1; seq <= (round + 1) * perRound; seq++) {
      const extra = isBad(seq) ? unknownFields : {};
      client.ws.send(JSON.stringify({ seq, op: 'event', external_id: 'slow', name: `e${seq}`, ...extra }));
    }
    await until(`round ${round}`, async () => (await logged(project, 'slow')) === (round + 1) * (perRound - badPerRound));
  }
  client.socket.resume();
  await until('every answer', () => client.answers.length >= total || client.ws.readyState === WebSocket.CLOSED);
  t.same(seqs(client.answers), Array.from({ length: total }, (_, i) => i + 1), 'one answer per frame, in order');
  t.ok(
    client.answers.every((a) => (isBad(a.seq ?? 0) ? a.errors?.length === 101 : a.accepted === true)),
    'each answer is the one for its frame',
  );
  t.equal(client.ws.readyState, WebSocket.OPEN);
});

t.test('a flood of frames is answered frame by frame (refused past the bound), never cut off', async (t) => {
  const project = await d.createProject();
  const client = await open(gw.port, project.sdk_key);
  t.teardown(() => client.ws.terminate());
  const total = 20000;
  client.socket.pause();
  for (let seq = 1; seq <= total; seq++) client.ws.send(JSON.stringify({ seq, op: 'event', external_id: 'flood', name: `e${seq}` }));
  // The first 4096 frames fill the in-flight bound, so they are never refused: once they are in the
  // log, the gateway has been answering while the client did not read.
  await until('a full bound of appends', async () => (await logged(project, 'flood')) >= 4096);
  client.socket.resume();
  await until('every answer', () => client.answers.length >= total || client.ws.readyState === WebSocket.CLOSED);
  t.same(seqs(client.answers), Array.from({ length: total }, (_, i) => i + 1), 'one answer per frame, in order');
  const refused = client.answers.filter((a) => a.accepted !== true);
  t.ok(
    refused.every((a) => a.errors?.[0]?.code === 'unavailable'),
    'a frame is accepted or refused as unavailable',
  );
  const names = (await entriesOf(d.prefix, project.project_id, 'flood')).map((e) => (e.op === 'event' ? e.name : e.op));
  t.same(
    names,
    client.answers.filter((a) => a.accepted === true).map((a) => `e${a.seq}`),
    'exactly the accepted frames are in the log, in order',
  );
  t.equal(client.ws.readyState, WebSocket.OPEN);
});

t.test('a frame between 64 KiB and 1 MiB is answered payload_too_large and the socket stays usable', async (t) => {
  const project = await d.createProject();
  const client = await open(gw.port, project.sdk_key);
  t.teardown(() => client.ws.terminate());
  client.ws.send(JSON.stringify({ seq: 1, op: 'event', external_id: 'big', name: 'n', pad: 'x'.repeat(900 * 1024) }));
  client.ws.send(JSON.stringify({ seq: 2, op: 'event', external_id: 'big', name: 'n' }));
  await until('both answers', () => client.answers.length === 2 || client.ws.readyState === WebSocket.CLOSED);
  t.same(client.answers, [
    { seq: null, errors: [{ code: 'payload_too_large', message: 'The body is over the size limit.' }] },
    { seq: 2, accepted: true },
  ]);
  t.equal(client.ws.readyState, WebSocket.OPEN);
});

/** A uWS socket stand-in: `buffered` is what uWS would hold; send drops past MAX_BACKPRESSURE as uWS does, or when told to. */
function fakeSocket(): AnswerSocket & { sent: string[]; buffered: number; dropNext: boolean; ended: number | null } {
  return {
    sent: [],
    buffered: 0,
    dropNext: false,
    ended: null,
    send(message) {
      if (this.buffered > MAX_BACKPRESSURE || this.dropNext) {
        this.dropNext = false;
        return 2;
      }
      this.sent.push(message);
      return 1;
    },
    getBufferedAmount() {
      return this.buffered;
    },
    cork(cb) {
      cb();
    },
    end(code) {
      this.ended = code;
    },
  };
}

t.test('answer queue: order, waiting out backpressure, a dropped send kept, the close after the last answer', async (t) => {
  const ws = fakeSocket();
  const answers = new AnswerQueue();
  const first = answers.reserve();
  answers.push(ws, 'b');
  t.same(ws.sent, [], 'a ready answer waits for the one running ahead of it');
  answers.fill(ws, first, 'a');
  t.same(ws.sent, ['a', 'b']);

  ws.buffered = SEND_HIGH_WATER;
  answers.push(ws, 'c');
  t.equal(answers.congested(ws), true);
  t.same([ws.sent.length, answers.size, answers.chars], [2, 1, 1], 'held while uWS is at the mark');
  ws.buffered = 0;
  ws.dropNext = true;
  answers.flush(ws);
  t.same([ws.sent.length, answers.size], [2, 1], 'a send uWS dropped stays queued');

  const last = answers.reserve();
  answers.endAfter(ws, 1013, 'too many');
  t.equal(answers.ending, true);
  ws.buffered = 0;
  answers.flush(ws);
  t.same([ws.sent, ws.ended], [['a', 'b', 'c'], null], 'the close waits for the answer still running');
  answers.fill(ws, last, 'd');
  t.same([ws.sent, ws.ended, answers.size, answers.chars], [['a', 'b', 'c', 'd'], 1013, 0, 0]);
});
