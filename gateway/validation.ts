import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { CallerError, type ErrorItem } from '../schemas/errors.ts';
import { capped, errorItem as item, ErrorList, violations, type TwoWayValidator } from '../engine/ajv-errors.ts';
import {
  BatchBody,
  BatchLimits,
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

/** The checked value; throws the violations as a CallerError (400 validation_failed) at the route's catch boundary. */
export function valid<T>(checked: Checked<T>): T {
  if (!checked.ok) throw new CallerError('validation_failed', checked.errors);
  return checked.value;
}

/**
 * Every request-body validator of the SDK surface, compiled once at start (STYLE.md 6). Errors are
 * mapped to API.md section 2 items: `path` is a JSON pointer (for `required` and
 * `additionalProperties` it names the property), `message` is `<path>: <what is wrong>`. An answer
 * lists at most MAX_ERROR_ITEMS of them, and a value too large to be valid only its first
 * (engine/ajv-errors.ts), so a bad body costs about what a good one does.
 */
export class Validators {
  readonly identify: Check<IdentifyBodyT>;
  readonly tags: Check<TagsBodyT>;
  readonly event: Check<EventBodyT>;
  readonly receipt: Check<ReceiptBodyT>;
  readonly consent: Check<ConsentBodyT>;
  private readonly subscriptionByType: Record<SubscriptionType, TwoWayValidator>;
  private readonly subscribeOpByType: Record<SubscriptionType, TwoWayValidator>;
  private readonly opByName: Record<keyof typeof OpSchemas, TwoWayValidator>;
  private readonly batch: TwoWayValidator;

  constructor() {
    const all = new Ajv({ allErrors: true });
    const first = new Ajv();
    addFormats.default(all);
    addFormats.default(first);
    const twoWay = (schema: object): TwoWayValidator => ({ first: first.compile(schema), all: all.compile(schema) });
    const compile = <T>(schema: object): Check<T> => {
      const v = twoWay(schema);
      return (value, prefix = '') => checked<T>(v, value, prefix);
    };
    this.identify = compile(IdentifyBody);
    this.tags = compile(TagsBody);
    this.event = compile(EventBody);
    this.receipt = compile(ReceiptBody);
    this.consent = compile(ConsentBody);
    this.batch = twoWay(BatchBody);
    this.subscriptionByType = byType((t) => twoWay(SubscriptionBodyByType[t]));
    this.subscribeOpByType = byType((t) => twoWay(SubscribeOpByType[t]));
    this.opByName = {
      identify: twoWay(OpSchemas.identify),
      tags: twoWay(OpSchemas.tags),
      event: twoWay(OpSchemas.event),
      receipt: twoWay(OpSchemas.receipt),
    };
  }

  /** A subscription body, checked against the schema of its own `type`. */
  subscription(value: unknown): Checked<SubscriptionBodyT> {
    const v = byTypeOf(this.subscriptionByType, value, '');
    return Array.isArray(v) ? { ok: false, errors: v } : checked<SubscriptionBodyT>(v, value, '');
  }

  /** One batch or WebSocket operation; `prefix` is prepended to every error path. */
  op(value: unknown, prefix = ''): Checked<SdkOp> {
    const v = this.opValidator(value, prefix);
    return Array.isArray(v) ? { ok: false, errors: v } : checked<SdkOp>(v, value, prefix);
  }

  /**
   * A batch body: the envelope (1 to 1000 operations, before any operation is looked at), then
   * each operation. At most MAX_ERROR_ITEMS errors are listed; past them operations are only
   * counted, and a last item says how many failed in all.
   */
  batchBody(value: unknown): Checked<SdkOp[]> {
    const list = new ErrorList();
    list.add(violations(this.batch, value, ''), false);
    const ops = isObject(value) && Array.isArray(value['operations']) && value['operations'].length <= BatchLimits.maxItems ? value['operations'] : [];
    const out: SdkOp[] = [];
    for (let i = 0; i < ops.length; i++) {
      const op: unknown = ops[i];
      if (list.full) {
        if (!this.opPasses(op)) list.countFailure();
        continue;
      }
      const one = this.op(op, `/operations/${i}`);
      if (one.ok) out.push(one.value);
      else list.add(one.errors);
    }
    return list.ok ? { ok: true, value: out } : { ok: false, errors: list.result('/operations', 'operations') };
  }

  /** The validator of an operation's kind, or why there is none. */
  private opValidator(value: unknown, prefix: string): TwoWayValidator | ErrorItem[] {
    if (!isObject(value)) return [item(prefix, 'must be object')];
    const name = value['op'];
    if (name === 'subscribe') return byTypeOf(this.subscribeOpByType, value, prefix);
    if (name === 'identify' || name === 'tags' || name === 'event' || name === 'receipt') return this.opByName[name];
    return [item(`${prefix}/op`, name === undefined ? 'is required' : `must be one of ${opNames}`)];
  }

  /** Whether an operation is valid, at the cost of finding its first error only. */
  private opPasses(value: unknown): boolean {
    const v = this.opValidator(value, '');
    return !Array.isArray(v) && v.first(value);
  }
}

const opNames = ['identify', 'subscribe', 'tags', 'event', 'receipt'].join(', ');
const typeNames = SubscriptionTypes.join(', ');

function checked<T>(v: TwoWayValidator, value: unknown, prefix: string): Checked<T> {
  const errors = violations(v, value, prefix);
  return errors.length === 0 ? { ok: true, value: value as T } : { ok: false, errors: capped(errors, prefix) };
}

function byType(make: (t: SubscriptionType) => TwoWayValidator): Record<SubscriptionType, TwoWayValidator> {
  return {
    IOS_PUSH: make('IOS_PUSH'),
    ANDROID_PUSH: make('ANDROID_PUSH'),
    EMAIL: make('EMAIL'),
    SMS: make('SMS'),
    WEB_PUSH: make('WEB_PUSH'),
  };
}

/** Picks the schema by `type` so the errors name that type's rules only; or why there is none. */
function byTypeOf(fns: Record<SubscriptionType, TwoWayValidator>, value: unknown, prefix: string): TwoWayValidator | ErrorItem[] {
  if (!isObject(value)) return [item(prefix, 'must be object')];
  const type = value['type'];
  if (typeof type !== 'string' || !Object.hasOwn(fns, type)) {
    return [item(`${prefix}/type`, type === undefined ? 'is required' : `must be one of ${typeNames}`)];
  }
  return fns[type as SubscriptionType];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
