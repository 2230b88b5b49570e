import { hash } from 'node:crypto';
import { SubscriptionTypes, type SubscriptionType } from '../../../schemas/sdk.ts';

/** A subscription as its owner's record names it. */
export interface SubscriptionRef {
  type: SubscriptionType;
  token: string;
}

/**
 * The id of a subscription (docs/api.md#users-and-events): SHA-256 of the project, type and token,
 * shaped as a UUID (version 8, RFC 9562's custom layout), so one (type, token) has the same id
 * whoever owns it and however often it is registered.
 */
export function subscriptionId(project: string, type: SubscriptionType, token: string): string {
  const hex = hash('sha256', `${project}\0${type}\0${token}`, 'hex');
  const variant = ((parseInt(hex.charAt(16), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** The field of a subscription in its owner's record. */
export function fieldOf(ref: SubscriptionRef): string {
  return `${ref.type}:${ref.token}`;
}

/** The field of a subscription in its owner's record, or null when it names no known type. */
export function parseField(field: string): SubscriptionRef | null {
  const colon = field.indexOf(':');
  const type = field.slice(0, colon);
  return colon > 0 && SubscriptionTypes.includes(type as SubscriptionType) ? { type: type as SubscriptionType, token: field.slice(colon + 1) } : null;
}

/** The 32 hex digits of a subscription id, or null when it is not one. */
export function idDigits(id: string): string | null {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(id) ? id.replaceAll('-', '') : null;
}
