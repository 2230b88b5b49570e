/**
 * The simulators listen on loopback, which the outbound guard refuses by default
 * (docs/api.md#outbound-urls): every engine and gateway a test builds allows it, as `make run` does.
 * Tests of the guard itself leave it out.
 */
export const localOutbound: Readonly<Record<string, string>> = { OUTBOUND_ALLOW_PRIVATE: 'true' };

/** The same for provider clients a test builds directly. */
export const localPolicy = { allowPrivate: true, webPushHosts: undefined } as const;
