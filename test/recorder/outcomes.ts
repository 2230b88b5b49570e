import type { OutcomeEntry } from '../../schemas/outcomes.ts';

/** An outcome as the dispatch actor appends it. */
export function outcome(project: string, n: number, over: Partial<OutcomeEntry> = {}): OutcomeEntry {
  return {
    id: `d${n}`,
    project,
    notification_id: 'n1',
    external_id: `u${n % 7}`,
    channel: 'PUSH',
    subscription_type: 'IOS_PUSH',
    token_tail: '…a9f3',
    attempt: 1,
    status: 'sent',
    error_code: null,
    hint: null,
    provider_message_id: `pm${n}`,
    latency_ms: 12,
    retrying: false,
    at: Date.parse('2026-11-22T10:00:00.000Z') + n,
    ...over,
  };
}
