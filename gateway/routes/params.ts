import Type from 'typebox';
import { ExternalId } from '../../schemas/sdk.ts';
import { SegmentName } from '../../schemas/segments.ts';

/** Path parameters shared by several routes (percent-decoded before they are checked). */
export const UserParams = Type.Object({ external_id: ExternalId });
export const SegmentParams = Type.Object({ name: SegmentName });
/** A notification id (docs/api.md#notifications); receipts carry it as svc_message_id, at most 128 characters. */
export const NotificationParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });
