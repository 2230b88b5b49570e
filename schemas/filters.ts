import Type, { type Static } from 'typebox';
import { SubscriptionTypeSchema } from './sdk.ts';

/**
 * Audience filters (docs/api.md#filters-and-segments): conditions joined by AND, `{"operator":"OR"}` entries between
 * groups (AND binds tighter). Each condition kind has its own schema so a checker can pick it by
 * `field` (and `relation` for tags) and report only that kind's rules; engine/infra/clickhouse/filters
 * adds what a schema cannot say (where an OR may stand).
 */

export const FilterLimits = {
  /** Entries in one list, conditions and OR separators together. */
  entries: 200,
  /** Values of one `in` condition. */
  inValues: 100,
} as const;

const field = <F extends string>(name: F) => Type.Literal(name);
const TagKey = Type.String({ minLength: 1, maxLength: 128 });
/** As a tag value (docs/api.md#tags): text up to 1024 characters, or a number. */
const TagScalar = Type.Union([Type.String({ maxLength: 1024 }), Type.Number()]);

export const TagCompareRelations = ['=', '!=', '>', '<'] as const;
export const TagRelations = [...TagCompareRelations, 'exists', 'not_exists', 'in'] as const;
export type TagRelation = (typeof TagRelations)[number];

/**
 * `=`, `!=`, `>`, `<`. A user's tag that is a number compares as a number when the value is a
 * number or a numeric string ("10" > "9"), exactly whatever its size (both are doubles, as
 * ClickHouse's Float64); a text tag compares as text. `!=` is the negation of `=`: it also matches
 * users without the tag.
 */
export const TagCompareCondition = Type.Object(
  {
    field: field('tag'),
    key: TagKey,
    relation: Type.Union([Type.Literal('='), Type.Literal('!='), Type.Literal('>'), Type.Literal('<')]),
    value: TagScalar,
  },
  { additionalProperties: false },
);

/** `in`: the tag equals (as `=`) one of the values. */
export const TagInCondition = Type.Object(
  {
    field: field('tag'),
    key: TagKey,
    relation: Type.Literal('in'),
    value: Type.Array(TagScalar, { minItems: 1, maxItems: FilterLimits.inValues }),
  },
  { additionalProperties: false },
);

export const TagExistsCondition = Type.Object(
  { field: field('tag'), key: TagKey, relation: Type.Union([Type.Literal('exists'), Type.Literal('not_exists')]) },
  { additionalProperties: false },
);

/**
 * Users who tracked (performed) or did not track (not_performed: fewer than `min_count` times,
 * users without any event included) event `name` at least `min_count` times (default 1) in the
 * last `within_hours` hours (absent: ever).
 */
export const EventCondition = Type.Object(
  {
    field: field('event'),
    name: Type.String({ minLength: 1, maxLength: 128 }),
    relation: Type.Union([Type.Literal('performed'), Type.Literal('not_performed')]),
    within_hours: Type.Optional(Type.Integer({ minimum: 1, maximum: 87600 })),
    min_count: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000000 })),
  },
  { additionalProperties: false },
);

/** Users with a live subscription of `type`. */
export const SubscriptionCondition = Type.Object(
  { field: field('subscription'), type: SubscriptionTypeSchema },
  { additionalProperties: false },
);

export const OrOperator = Type.Object({ operator: Type.Literal('OR') }, { additionalProperties: false });

export const FilterCondition = Type.Union([TagCompareCondition, TagInCondition, TagExistsCondition, EventCondition, SubscriptionCondition]);
export const FilterEntry = Type.Union([FilterCondition, OrOperator]);
/** The whole list, for documentation (OpenAPI); requests are checked entry by entry. */
export const Filters = Type.Array(FilterEntry, { minItems: 1, maxItems: FilterLimits.entries });

export type TagCompareCondition = Static<typeof TagCompareCondition>;
export type TagInCondition = Static<typeof TagInCondition>;
export type TagExistsCondition = Static<typeof TagExistsCondition>;
export type EventCondition = Static<typeof EventCondition>;
export type SubscriptionCondition = Static<typeof SubscriptionCondition>;
export type OrOperator = Static<typeof OrOperator>;
export type FilterCondition = Static<typeof FilterCondition>;
export type FilterEntry = Static<typeof FilterEntry>;
export type Filters = Static<typeof Filters>;
