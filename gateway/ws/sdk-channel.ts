import { ErrorCodes, type ErrorCode, type ErrorItem } from '../../schemas/errors.ts';
import type { SdkOp } from '../../schemas/sdk.ts';
import { refusedEndpoint } from '../ingest/endpoints.ts';
import { opEntry } from '../ingest/entries.ts';
import { identityOk } from '../ingest/identity.ts';
import { checkOp } from '../ingest/sdk-checks.ts';
import type { Caller } from '../server/auth.ts';
import type { Checked } from '../server/checked.ts';
import type { GatewayDeps } from '../server/deps.ts';
import type { Outcome } from '../server/failure.ts';
import { parseJson } from '../server/json.ts';
import { rateLimitedItem } from '../server/rate-limit.ts';
import type { Socket, SocketChannel, UpgradeCall } from '../server/socket.ts';
import { AnswerQueue, type Slot } from './answer-queue.ts';
import { OrderedTakes } from './ordered-takes.ts';

/** Largest operation frame (the SDK body limit); larger frames get payload_too_large. */
const FRAME_LIMIT = 64 * 1024;
/**
 * The server closes the connection (1006, no answer) on a frame past this, so it sits above the
 * largest body a client may send anywhere (a 1 MiB batch) plus framing: every frame a client could
 * mistake for allowed gets payload_too_large. A fragmented frame is buffered up to this much.
 */
const MAX_PAYLOAD = 1024 * 1024 + 16 * 1024;
/** Answers a connection may have unsent (running, or ready for a slow reader) before frames are refused. */
const MAX_QUEUED = 4096;
/**
 * Characters of ready answers a connection may hold (one answer listing many violations can be
 * long). It also bounds the refusals: past it the connection closes with 1013 once flushed.
 */
const MAX_QUEUED_CHARS = 4 * 1024 * 1024;

const overLimit = 'Too many operations in flight on this connection; wait for answers before sending more.';

/** A frame after the caller-independent checks: an operation to run, or its answer already. */
type Frame = { seq: number; op: SdkOp } | { seq: number | null; answer: string };

interface Connection {
  /** The key is looked up again for every frame: revocation and the identity switch apply to open sockets. */
  key: string;
  answers: AnswerQueue;
  /** Each frame takes a rate-limit token; decided in arrival order, so appends keep their order. */
  takes: OrderedTakes;
  /** Frames (in arrival order) waiting for the key lookup in flight, so appends keep their order. */
  waiting: { frame: Frame; slot: Slot }[];
  lookingUp: boolean;
}

/** What a failed frame or answer is logged as. */
const what = 'sdk socket';

/**
 * The WebSocket SDK channel (docs/api.md#the-websocket-channel). The route pipeline checked the
 * key before the upgrade; it is looked up again (through the CallerCache) for each frame. Each
 * text frame is one batch operation plus `seq`; answers go out in the order frames arrived
 * (gateway/ws/answer-queue.ts).
 *
 * The server itself fails the connection (1006, queued answers lost) on a frame over MAX_PAYLOAD
 * and on a text frame that is not UTF-8 (RFC 6455 section 8.1 requires it; it cannot be switched off).
 */
export class SdkSocketChannel implements SocketChannel<unknown, Connection> {
  readonly maxPayload = MAX_PAYLOAD;
  private readonly sockets = new Set<Socket<Connection>>();

  constructor(
    private readonly deps: GatewayDeps,
    private readonly check: (op: unknown) => Checked<SdkOp> = checkOp,
  ) {}

  /** The upgrade took its rate-limit token already; each frame takes one more. */
  upgrade({ key, accept }: UpgradeCall<unknown, Connection>): void {
    const takes = new OrderedTakes(this.deps.limiter, (err) => this.deps.failures.report(`${what} frame`, err));
    accept({ key, answers: new AnswerQueue(), takes, waiting: [], lookingUp: false });
  }

  open(ws: Socket<Connection>): void {
    this.sockets.add(ws);
  }

  drain(ws: Socket<Connection>): void {
    ws.getUserData().answers.flush(ws);
  }

  close(ws: Socket<Connection>): void {
    ws.getUserData().answers.closed();
    this.sockets.delete(ws);
  }

  /** Closes every connection (graceful shutdown): what the server can take is sent, then 1001 going away. */
  closeAll(): void {
    for (const ws of [...this.sockets]) ws.getUserData().answers.endNow(ws, 1001, 'server shutting down');
  }

  message(ws: Socket<Connection>, message: ArrayBuffer, isBinary: boolean): void {
    const conn = ws.getUserData();
    const answers = conn.answers;
    // A close is decided: the frame is not taken and gets no answer; the close code says why.
    if (answers.ending) return;
    const frame = this.guardedParse(message, isBinary);
    // Over the bound, a frame is refused with an answer while the client reads; a client that
    // neither reads nor waits for answers is closed (1013 try again later) once they are flushed.
    const full = answers.size >= MAX_QUEUED;
    if (answers.chars >= MAX_QUEUED_CHARS || (full && answers.congested(ws))) return answers.endAfter(ws, 1013, 'too many operations in flight');
    if (full) return answers.push(ws, errorFrame(frame.seq, 'unavailable', overLimit));
    const slot = answers.reserve();
    if (conn.waiting.length === 0) {
      const caller = this.deps.callers.peek(conn.key);
      if (caller !== undefined) return this.run(ws, conn, frame, slot, caller);
    }
    conn.waiting.push({ frame, slot });
    if (!conn.lookingUp) this.lookUp(ws, conn);
  }

  /** Loads the key (CallerCache: a Redis failure serves the last answer) and runs the waiting frames. */
  private lookUp(ws: Socket<Connection>, conn: Connection): void {
    conn.lookingUp = true;
    const runWaiting = (answer: (frame: Frame, slot: Slot) => void): void => {
      conn.lookingUp = false;
      for (const { frame, slot } of conn.waiting.splice(0)) answer(frame, slot);
    };
    this.deps.callers.load(conn.key).then(
      (caller) => runWaiting((frame, slot) => this.run(ws, conn, frame, slot, caller)),
      (err: unknown) => {
        const outcome = this.deps.failures.outcome('key lookup', err);
        runWaiting((frame, slot) => conn.answers.fill(ws, slot, outcomeFrame(frame.seq, outcome)));
      },
    );
  }

  private run(ws: Socket<Connection>, conn: Connection, frame: Frame, slot: Slot, caller: Caller | null): void {
    const answers = conn.answers;
    if (caller === null) {
      answers.fill(ws, slot, errorFrame(frame.seq, 'invalid_key'));
      return answers.endAfter(ws, 1008, 'key revoked or unknown');
    }
    // Every frame with a live key counts, like every HTTP call, whatever it holds.
    conn.takes.take(
      caller,
      (wait) => (wait === 0 ? this.perform(ws, answers, frame, slot, caller) : answers.fill(ws, slot, JSON.stringify({ seq: frame.seq, errors: [rateLimitedItem(wait)] }))),
      (err) => answers.fill(ws, slot, outcomeFrame(frame.seq, this.deps.failures.outcome(`${what} frame`, err))),
    );
  }

  /** A frame of a live key within its rate limit: its answer, or the append of its operation. */
  private perform(ws: Socket<Connection>, answers: AnswerQueue, frame: Frame, slot: Slot, caller: Caller): void {
    if ('answer' in frame) return answers.fill(ws, slot, frame.answer);
    const { seq, op } = frame;
    if (!identityOk(caller, op.external_id, op.identity_hash)) {
      return answers.fill(ws, slot, errorFrame(seq, 'identity_verification_failed', undefined, '/identity_hash'));
    }
    this.deps.tracker.start();
    // Started in a then, so a throw building the entry is answered like a failed append.
    Promise.resolve()
      .then(() => this.deps.ingest.write([opEntry(caller.project, op, Date.now())]))
      .then(
        () => {
          this.deps.metrics.acceptedWrites.inc();
          answers.fill(ws, slot, `{"seq":${seq},"accepted":true}`);
        },
        (err: unknown) => answers.fill(ws, slot, outcomeFrame(seq, this.deps.failures.outcome(`${what} frame`, err))),
      )
      .finally(() => this.deps.tracker.done())
      .catch((err: unknown) => this.deps.failures.report(`${what} answer`, err));
  }

  /** parse(), with a throw answered like any bug (500 internal): a throw out of a socket handler ends the process. */
  private guardedParse(message: ArrayBuffer, isBinary: boolean): Frame {
    try {
      return this.parse(message, isBinary);
    } catch (err) {
      return { seq: null, answer: outcomeFrame(null, this.deps.failures.outcome(`${what} frame`, err)) };
    }
  }

  /** The checks that need no caller: text, size, JSON, seq, the operation's schema. */
  private parse(message: ArrayBuffer, isBinary: boolean): Frame {
    if (isBinary) return { seq: null, answer: errorFrame(null, 'invalid_json', 'Frames must be text: one JSON operation each.') };
    if (message.byteLength > FRAME_LIMIT) return { seq: null, answer: errorFrame(null, 'payload_too_large') };
    let value: unknown;
    try {
      value = parseJson(new Uint8Array(message));
    } catch {
      return { seq: null, answer: errorFrame(null, 'invalid_json') };
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      return { seq: null, answer: errorFrame(null, 'validation_failed', 'body: must be object', '') };
    }
    const { seq, ...op } = value as Record<string, unknown>;
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq)) {
      const what = seq === undefined ? 'is required' : 'must be integer';
      return { seq: null, answer: errorFrame(null, 'validation_failed', `seq: ${what}`, '/seq') };
    }
    const checked = this.check(op);
    if (!checked.ok) return { seq, answer: JSON.stringify({ seq, errors: checked.errors }) };
    const refused = checked.value.op === 'subscribe' ? refusedEndpoint(this.deps.config, checked.value, '/token') : undefined;
    if (refused) return { seq, answer: JSON.stringify({ seq, errors: [refused] }) };
    return { seq, op: checked.value };
  }
}

/** The answer to a frame that failed by a classified failure (gateway/server/failure.ts). */
function outcomeFrame(seq: number | null, outcome: Outcome): string {
  return JSON.stringify({ seq, errors: outcome.items ?? [{ code: outcome.code, message: ErrorCodes[outcome.code].message }] });
}

function errorFrame(seq: number | null, code: ErrorCode, message?: string, path?: string): string {
  const item: ErrorItem = { code, message: message ?? ErrorCodes[code].message };
  if (path !== undefined) item.path = path;
  return JSON.stringify({ seq, errors: [item] });
}
