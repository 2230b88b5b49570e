/** A ClickHouse string literal holding `text` exactly: every backslash and quote escaped. */
export function stringLiteral(text: string): string {
  return `'${text.replace(/[\\']/g, (c) => `\\${c}`)}'`;
}
