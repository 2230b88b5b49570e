-- Inserts rows {from:UInt64} .. {from}+{count}-1 of {rows:UInt64} synthetic delivery attempts into
-- message_deliveries, generated inside ClickHouse (INSERT ... SELECT FROM numbers()) for
-- bench/deliveries-table.ts (for bench/deliveries-query.ts and bench/dashboard.ts), which fills the
-- table a slice at a time to show its progress.
-- Parameters:
--   {rows:UInt64}            how many rows the whole table gets
--   {from:UInt64}            the first row of this slice
--   {count:UInt64}           how many rows this slice inserts
--   {big:String}             the big project (94% of rows); the rest go to {small:String}-0 .. -4
--   {small:String}           prefix of the five small projects
--   {start_ms:Int64}         the oldest `at` (ms since the epoch)
--   {span_ms:Int64}          how far `at` spreads after {start_ms} (30 days)
--   {users:UInt64}           distinct external_ids (1 000 000)
--   {notifications:UInt64}   distinct notification ids (20 000)
-- Shape: notification k is sent at an even step through the span and its deliveries land within
-- 10 minutes of it; users are uniform; 90% sent, 7% failed, 3% skipped; PUSH 80% (iOS 45%,
-- Android 45%, web 10%), EMAIL 12%, SMS 8%; error codes follow the subscription type; a third of
-- the retryable failures (429, timeout, connection) are retried.
INSERT INTO message_deliveries
SELECT
    if(r % 100 < 94, {big:String}, concat({small:String}, '-', toString(intDiv(r, 100) % 5))) AS project,
    concat(notification_id, ':', hex(number)) AS id,
    concat(toString(at_ms), '-0') AS stream_id,
    notification_id,
    concat('user-', toString(cityHash64(number, 'user') % {users:UInt64})) AS external_id,
    channel,
    subscription_type,
    if(subscription_type IS NULL, NULL, concat('…', substring(lower(hex(cityHash64(number, 'token'))), 1, 4))) AS token_tail,
    toUInt16(if(retried, 2, 1)) AS attempt,
    status,
    error_code,
    if(error_code IS NULL, NULL, concat('Operator hint for ', error_code, ': check the provider settings and the subscription.')) AS hint,
    if(status = 'sent', lower(hex(cityHash64(number, 'provider'))), NULL) AS provider_message_id,
    if(status = 'skipped', NULL, toUInt32(5 + cityHash64(number, 'latency') % 200)) AS latency_ms,
    retrying,
    fromUnixTimestamp64Milli(at_ms, 'UTC') AS at
FROM
(
    SELECT
        number,
        cityHash64(number, 'mix') AS r,
        intDiv(number * {notifications:UInt64}, {rows:UInt64}) AS k,
        lower(hex(cityHash64(k, 'notification'))) AS notification_id,
        toInt64({start_ms:Int64} + intDiv(k * {span_ms:Int64}, {notifications:UInt64}) + cityHash64(number, 'at') % 600000) AS at_ms,
        cityHash64(number, 'channel') % 100 AS c,
        multiIf(c < 80, 'PUSH', c < 92, 'EMAIL', 'SMS') AS channel,
        cityHash64(number, 'status') % 100 AS s,
        multiIf(s < 90, 'sent', s < 97, 'failed', 'skipped') AS status,
        cityHash64(number, 'code') % 100 AS e,
        multiIf(
            status = 'skipped' AND e < 20, CAST(NULL, 'Nullable(String)'),
            channel = 'PUSH', multiIf(c < 36, 'IOS_PUSH', c < 72, 'ANDROID_PUSH', 'WEB_PUSH'),
            channel) AS subscription_type,
        multiIf(
            status = 'sent', CAST(NULL, 'Nullable(String)'),
            status = 'skipped', multiIf(e < 20, 'no_subscription', e < 80, 'opted_out', 'canceled'),
            e < 10, 'timeout',
            e < 15, 'connection_error',
            subscription_type = 'IOS_PUSH', if(e < 85, 'apns_410_Unregistered', 'apns_403_InvalidProviderToken'),
            subscription_type = 'ANDROID_PUSH', if(e < 85, 'fcm_404_UNREGISTERED', 'fcm_429_QUOTA_EXCEEDED'),
            subscription_type = 'WEB_PUSH', 'webpush_410',
            subscription_type = 'SMS', 'twilio_21610',
            'sendgrid_400') AS error_code,
        error_code IN ('timeout', 'connection_error', 'fcm_429_QUOTA_EXCEEDED') AND r % 3 = 0 AS retrying,
        status = 'sent' AND r % 50 = 1 AS retried
    FROM numbers({from:UInt64}, {count:UInt64})
);
