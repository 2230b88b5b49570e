import Type from 'typebox';
import { ExternalId } from '../../schemas/sdk.ts';
import { SegmentName } from '../../schemas/segments.ts';

/** Path parameters shared by several routes (percent-decoded before they are checked). */
export const UserParams = Type.Object({ external_id: ExternalId });
export const SegmentParams = Type.Object({ name: SegmentName });
