import Type, { type Static } from 'typebox';
import { Channel, DeliveryStatus } from './outcomes.ts';

/**
 * Re-drive (docs/api.md#re-drive): POST /api/notifications/{id}/redrive sends a notification's
 * content again to the users whose last attempt for it matches these filters.
 */
export const RedriveBody = Type.Object(
  {
    status: Type.Optional(DeliveryStatus),
    error_code: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    channel: Type.Optional(Channel),
    since: Type.Optional(Type.String({ format: 'instant', description: "the last attempt at or after it (ISO 8601 with a time zone)" })),
    until: Type.Optional(Type.String({ format: 'instant', description: 'the last attempt before it' })),
    idempotency_key: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  },
  { additionalProperties: false },
);

/** The audience of a re-drive as its notification keeps it (NotificationSpec `redrive`): times in ms. */
export const Redrive = Type.Object({
  of: Type.String(),
  status: Type.Optional(DeliveryStatus),
  error_code: Type.Optional(Type.String()),
  channel: Type.Optional(Channel),
  since: Type.Optional(Type.Integer()),
  until: Type.Optional(Type.Integer()),
});

export type RedriveBody = Static<typeof RedriveBody>;
export type Redrive = Static<typeof Redrive>;
