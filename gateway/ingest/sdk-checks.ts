import type { ErrorItem } from '../../schemas/errors.ts';
import { errorItem as item, ErrorList, violations } from '../../engine/infra/validation/ajv-errors.ts';
import { compileTwoWay, type TwoWayValidator } from '../../engine/infra/validation/validator.ts';
import {
  BatchBody,
  BatchLimits,
  OpSchemas,
  SubscribeOpByType,
  SubscriptionBodyByType,
  SubscriptionTypes,
  type SdkOp,
  type SubscriptionBody as SubscriptionBodyT,
  type SubscriptionType,
} from '../../schemas/sdk.ts';
import { checkWith, type Checked } from '../server/checked.ts';

/** The checks of SDK writes one schema cannot say: a subscription and an operation by their kind, a batch entry by entry. */

const batch = compileTwoWay(BatchBody);
const byType = (make: (t: SubscriptionType) => TwoWayValidator): Record<SubscriptionType, TwoWayValidator> => ({
  IOS_PUSH: make('IOS_PUSH'),
  ANDROID_PUSH: make('ANDROID_PUSH'),
  EMAIL: make('EMAIL'),
  SMS: make('SMS'),
  WEB_PUSH: make('WEB_PUSH'),
});
const subscriptionByType = byType((t) => compileTwoWay(SubscriptionBodyByType[t]));
const subscribeOpByType = byType((t) => compileTwoWay(SubscribeOpByType[t]));
const opByName: Record<keyof typeof OpSchemas, TwoWayValidator> = {
  identify: compileTwoWay(OpSchemas.identify),
  tags: compileTwoWay(OpSchemas.tags),
  event: compileTwoWay(OpSchemas.event),
  receipt: compileTwoWay(OpSchemas.receipt),
};

/** A subscription body, checked against the schema of its own `type`. */
export function checkSubscription(value: unknown): Checked<SubscriptionBodyT> {
  const v = byTypeOf(subscriptionByType, value, '');
  return Array.isArray(v) ? { ok: false, errors: v } : checkWith<SubscriptionBodyT>(v, value, '');
}

/** One batch or WebSocket operation; `prefix` is prepended to every error path. */
export function checkOp(value: unknown, prefix = ''): Checked<SdkOp> {
  const v = opValidator(value, prefix);
  return Array.isArray(v) ? { ok: false, errors: v } : checkWith<SdkOp>(v, value, prefix);
}

/**
 * A batch body: the envelope (1 to 1000 operations, before any operation is looked at), then
 * each operation. At most MAX_ERROR_ITEMS errors are listed; past them operations are only
 * counted, and a last item says how many failed in all.
 */
export function checkBatch(value: unknown): Checked<SdkOp[]> {
  const list = new ErrorList();
  list.add(violations(batch, value, ''), false);
  const ops = isObject(value) && Array.isArray(value['operations']) && value['operations'].length <= BatchLimits.maxItems ? value['operations'] : [];
  const out: SdkOp[] = [];
  for (let i = 0; i < ops.length; i++) {
    const op: unknown = ops[i];
    if (list.full) {
      if (!opPasses(op)) list.countFailure();
      continue;
    }
    const one = checkOp(op, `/operations/${i}`);
    if (one.ok) out.push(one.value);
    else list.add(one.errors);
  }
  return list.ok ? { ok: true, value: out } : { ok: false, errors: list.result('/operations', 'operations') };
}

/** The validator of an operation's kind, or why there is none. */
function opValidator(value: unknown, prefix: string): TwoWayValidator | ErrorItem[] {
  if (!isObject(value)) return [item(prefix, 'must be object')];
  const name = value['op'];
  if (name === 'subscribe') return byTypeOf(subscribeOpByType, value, prefix);
  if (name === 'identify' || name === 'tags' || name === 'event' || name === 'receipt') return opByName[name];
  return [item(`${prefix}/op`, name === undefined ? 'is required' : `must be one of ${opNames}`)];
}

/** Whether an operation is valid, at the cost of finding its first error only. */
function opPasses(value: unknown): boolean {
  const v = opValidator(value, '');
  return !Array.isArray(v) && v.first(value);
}

const opNames = ['identify', 'subscribe', 'tags', 'event', 'receipt'].join(', ');
const typeNames = SubscriptionTypes.join(', ');

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
