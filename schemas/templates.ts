import Type, { type Static } from 'typebox';
import { Contents, Localized } from './notifications.ts';
import { Channel } from './outcomes.ts';

/** Notification templates of a project (docs/api.md#templates). */

export const TemplateBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 128 }),
    headings: Type.Optional(Localized),
    contents: Contents,
    channel: Type.Optional(Channel),
  },
  { additionalProperties: false },
);

export const Template = Type.Object({
  id: Type.String(),
  name: Type.String(),
  headings: Type.Union([Localized, Type.Null()]),
  contents: Type.Record(Type.String(), Type.String()),
  channel: Channel,
  created_at: Type.String({ format: 'date-time' }),
});

export const TemplateList = Type.Object({ templates: Type.Array(Template) });
/** A template id: a UUID as the engine makes them, at most 128 characters as any id in a path. */
export const TemplateParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });

export type TemplateBody = Static<typeof TemplateBody>;
export type Template = Static<typeof Template>;
