import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { CallerError, type ErrorItem } from '../schemas/errors.ts';
import { errorItem as item, mapErrors } from '../engine/ajv-errors.ts';
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

/** The checked value; throws the violations as a CallerError (400 validation_failed) at the route's catch boundary. */
export function valid<T>(checked: Checked<T>): T {
  if (!checked.ok) throw new CallerError('validation_failed', checked.errors);
  return checked.value;
}

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
