/**
 * The push tokens of user i, so the tests, the benchmarks and the bare ceilings address the same
 * devices: one per user, in the shape the simulator of each type accepts.
 */

/** The IOS_PUSH token of user i: 64 hex digits (APNs device tokens are hex). */
export const iosToken = (i: number): string => `f${i.toString(16)}`.padStart(64, '0');

/** The ANDROID_PUSH (FCM registration) token of user i. */
export const androidToken = (i: number): string => `fcm-token-${i}`;
