import Type, { type Static } from 'typebox';
import { FilterEntry, Filters } from './filters.ts';

/**
 * Segments (docs/api.md#segments): a named, stored filter list. `All` always exists: every user with at
 * least one live subscription; it is never stored and cannot be deleted.
 */

export const ALL_SEGMENT = 'All';

/** 1 to 128 characters, case-sensitive; in paths it is percent-decoded first. */
export const SegmentName = Type.String({ minLength: 1, maxLength: 128 });

/** `POST /api/segments`, as documented (OpenAPI). */
export const SegmentBody = Type.Object({ name: SegmentName, filters: Filters }, { additionalProperties: false });

/**
 * The envelope the gateway validates; `filters` is checked entry by entry by the filter checker
 * (engine/infra/clickhouse/filters/check.ts), whose errors name the entry.
 */
export const SegmentEnvelope = Type.Object({ name: SegmentName, filters: Type.Unknown() }, { additionalProperties: false });

/** A segment as stored and answered; `All` has no filters and the project's creation time. */
export const Segment = Type.Object({
  name: Type.String(),
  filters: Type.Array(FilterEntry),
  created_at: Type.String({ format: 'date-time' }),
});

/** `GET /api/segments`: `All` included, sorted by name (code-unit order, so case-sensitive). */
export const SegmentList = Type.Object({ segments: Type.Array(Segment) });

/** `GET /api/segments/{name}/count`: the current size. */
export const SegmentCount = Type.Object({ name: Type.String(), count: Type.Integer({ minimum: 0 }) });

export type SegmentBody = Static<typeof SegmentBody>;
export type Segment = Static<typeof Segment>;
export type SegmentList = Static<typeof SegmentList>;
export type SegmentCount = Static<typeof SegmentCount>;
