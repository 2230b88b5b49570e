import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { ErrorItem } from '../schemas/errors.ts';
import {
  BatchBody,
  ConsentBody,
  EventBody,
  IdentifyBody,
  OpSchemas,
  ReceiptBody,
  SubscribeOpByType,
  SubscriptionBodyByType,
  SubscriptionTypes,
  TagsBody,
  type ConsentBody as ConsentBodyT,
  type EventBody as EventBodyT,
  type IdentifyBody as IdentifyBodyT,
  type ReceiptBody as ReceiptBodyT,
  type SdkOp,
  type SubscriptionBody as SubscriptionBodyT,
  type SubscriptionType,
  type TagsBody as TagsBodyT,
} from '../schemas/sdk.ts';

/** A checked value, or every violation found (paths are JSON pointers into the body). */
export type Checked<T> = { ok: true; value: T } | { ok: false; errors: ErrorItem[] };

type Check<T> = (value: unknown, prefix?: string) => Checked<T>;

/**
 * Every request-body validator of the SDK surface, compiled once at start (STYLE.md 6). Errors are
 * mapped to API.md section 2 items: `path` is a JSON pointer (for `required` and
 * `additionalProperties` it names the property), `message` is `<path>: <what is wrong>`.
 */
export class Validators {
  readonly identify: Check<IdentifyBodyT>;
  readonly tags: Check<TagsBodyT>;
  readonly event: Check<EventBodyT>;
  readonly receipt: Check<ReceiptBodyT>;
  readonly consent: Check<ConsentBodyT>;
  private readonly subscriptionByType: Record<SubscriptionType, ValidateFunction>;
  private readonly subscribeOpByType: Record<SubscriptionType, ValidateFunction>;
  private readonly opByName: Record<keyof typeof OpSchemas, ValidateFunction>;
  private readonly batch: ValidateFunction;

  constructor() {
    const ajv = new Ajv({ allErrors: true });
    addFormats.default(ajv);
    const compile = <T>(schema: object): Check<T> => {
      const fn = ajv.compile(schema);
      return (value, prefix = '') => (fn(value) ? { ok: true, value: value as T } : { ok: false, errors: mapErrors(fn.errors, prefix) });
    };
    this.identify = compile(IdentifyBody);
    this.tags = compile(TagsBody);
    this.event = compile(EventBody);
    this.receipt = compile(ReceiptBody);
    this.consent = compile(ConsentBody);
    this.batch = ajv.compile(BatchBody);
    this.subscriptionByType = byType((t) => ajv.compile(SubscriptionBodyByType[t]));
    this.subscribeOpByType = byType((t) => ajv.compile(SubscribeOpByType[t]));
    this.opByName = {
      identify: ajv.compile(OpSchemas.identify),
      tags: ajv.compile(OpSchemas.tags),
      event: ajv.compile(OpSchemas.event),
      receipt: ajv.compile(OpSchemas.receipt),
    };
  }

  /** A subscription body, checked against the schema of its own `type`. */
  subscription(value: unknown): Checked<SubscriptionBodyT> {
    return checkByType<SubscriptionBodyT>(this.subscriptionByType, value, '');
  }

  /** One batch or WebSocket operation; `prefix` is prepended to every error path. */
  op(value: unknown, prefix = ''): Checked<SdkOp> {
    if (!isObject(value)) return { ok: false, errors: [item(prefix, 'must be object')] };
    const name = value['op'];
    if (name === 'subscribe') return checkByType<SdkOp>(this.subscribeOpByType, value, prefix);
    if (name === 'identify' || name === 'tags' || name === 'event' || name === 'receipt') {
      const fn = this.opByName[name];
      return fn(value) ? { ok: true, value: value as SdkOp } : { ok: false, errors: mapErrors(fn.errors, prefix) };
    }
    const message = name === undefined ? 'is required' : `must be one of ${opNames}`;
    return { ok: false, errors: [item(`${prefix}/op`, message)] };
  }

  /** A batch body: the envelope, then every operation; all violations of all operations. */
  batchBody(value: unknown): Checked<SdkOp[]> {
    // Item errors come from op() below, which knows each op's own schema.
    const errors = this.batch(value) ? [] : mapErrors(this.batch.errors, '').filter((e) => !itemPath.test(e.path ?? ''));
    const ops = isObject(value) && Array.isArray(value['operations']) && value['operations'].length <= 1000 ? value['operations'] : [];
    const out: SdkOp[] = [];
    for (let i = 0; i < ops.length; i++) {
      const checked = this.op(ops[i], `/operations/${i}`);
      if (checked.ok) out.push(checked.value);
      else errors.push(...checked.errors);
    }
    return errors.length > 0 ? { ok: false, errors } : { ok: true, value: out };
  }
}

const itemPath = /^\/operations\/\d+(\/|$)/;
const opNames = ['identify', 'subscribe', 'tags', 'event', 'receipt'].join(', ');
const typeNames = SubscriptionTypes.join(', ');

function byType(make: (t: SubscriptionType) => ValidateFunction): Record<SubscriptionType, ValidateFunction> {
  return {
    IOS_PUSH: make('IOS_PUSH'),
    ANDROID_PUSH: make('ANDROID_PUSH'),
    EMAIL: make('EMAIL'),
    SMS: make('SMS'),
    WEB_PUSH: make('WEB_PUSH'),
  };
}

/** Picks the schema by `type` so the errors name that type's rules only. */
function checkByType<T>(fns: Record<SubscriptionType, ValidateFunction>, value: unknown, prefix: string): Checked<T> {
  if (!isObject(value)) return { ok: false, errors: [item(prefix, 'must be object')] };
  const type = value['type'];
  if (typeof type !== 'string' || !Object.hasOwn(fns, type)) {
    return { ok: false, errors: [item(`${prefix}/type`, type === undefined ? 'is required' : `must be one of ${typeNames}`)] };
  }
  const fn = fns[type as SubscriptionType];
  return fn(value) ? { ok: true, value: value as T } : { ok: false, errors: mapErrors(fn.errors, prefix) };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function item(path: string, message: string): ErrorItem {
  return { code: 'validation_failed', message: `${path === '' ? 'body' : path.slice(1)}: ${message}`, path };
}

function escapePointer(name: string): string {
  return name.replace(/~/g, '~0').replace(/\//g, '~1');
}

/**
 * Maps ajv errors to error items. An anyOf is reported once: with the errors of the branch whose
 * type matched (a too-long tag string says so), else as "must be string or number" (or "must be
 * one of a, b" for constants) instead of one line per branch.
 */
export function mapErrors(errors: ErrorObject[] | null | undefined, prefix: string): ErrorItem[] {
  const list = errors ?? [];
  // ajv lists an anyOf's branch errors before the anyOf itself; its summary takes the place of the first.
  const consumed = new Set<ErrorObject>();
  const summaries = new Map<ErrorObject, ErrorItem[]>();
  for (let i = 0; i < list.length; i++) {
    const e = list[i];
    if (e?.keyword !== 'anyOf') continue;
    // Its branch errors are the run right before it: walking back keeps this linear (a body with
    // thousands of bad values must not cost the event loop quadratic time).
    let start = i;
    while (start > 0 && isBranchOf(list[start - 1], e)) start--;
    const branches = list.slice(start, i);
    for (const b of branches) consumed.add(b);
    consumed.add(e);
    summaries.set(branches[0] ?? e, anyOfItems(e, branches, prefix));
  }
  const out: ErrorItem[] = [];
  for (const e of list) {
    const summary = summaries.get(e);
    if (summary) out.push(...summary);
    // An error with propertyName explains a propertyNames failure, reported once by that keyword.
    else if (!consumed.has(e) && e.propertyName === undefined) out.push(single(e, prefix));
  }
  return out;
}

function isBranchOf(b: ErrorObject | undefined, e: ErrorObject): boolean {
  return (
    b !== undefined &&
    b.schemaPath.startsWith(`${e.schemaPath}/`) &&
    (b.instancePath === e.instancePath || b.instancePath.startsWith(`${e.instancePath}/`))
  );
}

function anyOfItems(e: ErrorObject, branches: ErrorObject[], prefix: string): ErrorItem[] {
  const matched = matchedBranch(branches, e.schemaPath.length + 1, e.instancePath);
  if (matched.length > 0) return matched.map((b) => single(b, prefix));
  const consts = branches.filter((b) => b.keyword === 'const').map((b) => String(b.params['allowedValue']));
  // null only deletes a tag; the API calls tag values strings or numbers (API.md section 2 example).
  const types = branches.filter((b) => b.keyword === 'type' && b.params['type'] !== 'null').map((b) => String(b.params['type']));
  const message = consts.length > 0 ? `must be one of ${consts.join(', ')}` : `must be ${types.join(' or ')}`;
  return [item(prefix + e.instancePath, message)];
}

/** Errors of the first anyOf branch whose errors are all past a type/const match. */
function matchedBranch(branches: ErrorObject[], cut: number, at: string): ErrorObject[] {
  const byBranch = new Map<string, ErrorObject[]>();
  for (const b of branches) {
    const index = b.schemaPath.slice(cut).split('/')[0] ?? '';
    const group = byBranch.get(index) ?? [];
    group.push(b);
    byBranch.set(index, group);
  }
  for (const group of byBranch.values()) {
    if (group.every((b) => !(b.instancePath === at && (b.keyword === 'type' || b.keyword === 'const')))) return group;
  }
  return [];
}

function single(e: ErrorObject, prefix: string): ErrorItem {
  const path = prefix + e.instancePath;
  switch (e.keyword) {
    case 'required':
      return item(`${path}/${escapePointer(String(e.params['missingProperty']))}`, 'is required');
    case 'additionalProperties':
      return item(`${path}/${escapePointer(String(e.params['additionalProperty']))}`, 'is not allowed');
    case 'propertyNames':
      return item(`${path}/${escapePointer(String(e.params['propertyName']))}`, 'key must be 1 to 128 characters');
    default:
      return item(path, e.message ?? 'is invalid');
  }
}
