import { Liquid, Output, TokenKind, type Template } from 'liquidjs';

/**
 * Personal texts (docs/api.md#personal-content): `headings`, `contents` and the email subject and
 * body may hold Liquid placeholders, `{{ first_name | default: "there" }}`, filled at dispatch
 * from the user's tags and `external_id`. Only placeholders with the string and number filters
 * below are taken: no `{% tags %}` (no loops, no includes), so no code runs and a text costs its
 * length to fill.
 */

const FILTERS = new Set([
  'default',
  'upcase',
  'downcase',
  'capitalize',
  'strip',
  'lstrip',
  'rstrip',
  'truncate',
  'truncatewords',
  'append',
  'prepend',
  'replace',
  'replace_first',
  'remove',
  'remove_first',
  'escape',
  'url_encode',
  'plus',
  'minus',
  'times',
  'divided_by',
  'round',
  'floor',
  'ceil',
  'abs',
]);

const options = { strictFilters: true, ownPropertyOnly: true, parseLimit: 64 * 1024, renderLimit: 1000 } as const;
const plain = new Liquid(options);
const escaping = new Liquid({ ...options, outputEscape: 'escape' });
/** Parses only, filters unchecked, so that a filter outside the list gets its own message. */
const checking = new Liquid({ ...options, strictFilters: false });

/** Parsed texts, per engine; bounded, since texts come from notifications without end. */
const parsed = new Map<string, Template[]>();
const MAX_PARSED = 1000;

/** True when `text` has a placeholder to fill. */
export function isPersonal(text: string): boolean {
  return text.includes('{{') || text.includes('{%');
}

/** Why `text` is not a personal text the engine takes, or null when it is one (or has none). */
export function personalTextError(text: string): string | null {
  if (!isPersonal(text)) return null;
  let tokens: Template[];
  try {
    tokens = checking.parse(text);
  } catch (err) {
    return `has a malformed placeholder: ${err instanceof Error ? err.message : String(err)}`;
  }
  for (const token of tokens) {
    if (token instanceof Output) {
      const filter = token.value.filters.find((f) => !FILTERS.has(f.name));
      if (filter !== undefined) return `uses the filter ${filter.name}, which is not one of ${[...FILTERS].join(', ')}`;
    } else if (token.token.kind !== TokenKind.HTML) {
      return 'may hold {{ placeholders }} only, no {% tags %}';
    }
  }
  return null;
}

/**
 * `text` with its placeholders filled from `values`; an unknown name is empty. With `html`,
 * every filled value is HTML-escaped (the text around it is the sender's own HTML).
 */
export function fillPersonal(text: string, values: Record<string, unknown>, html: boolean): string {
  if (!isPersonal(text)) return text;
  const engine = html ? escaping : plain;
  const key = `${html ? 'h' : 'p'}${text}`;
  let template = parsed.get(key);
  if (template === undefined) {
    template = engine.parse(text);
    if (parsed.size >= MAX_PARSED) parsed.clear();
    parsed.set(key, template);
  }
  return engine.renderSync(template, values) as string;
}
