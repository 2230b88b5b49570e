/** A ClickHouse string literal holding `text` exactly: every backslash and quote escaped. */
export function stringLiteral(text: string): string {
  return `'${text.replace(/[\\']/g, (c) => `\\${c}`)}'`;
}

/** A ClickHouse identifier, backquoted. */
export function identifier(name: string): string {
  return `\`${name.replace(/[\\`]/g, (c) => `\\${c}`)}\``;
}
