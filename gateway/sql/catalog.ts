import type { Reader } from './read.ts';

/**
 * The functions an operator's query may call (docs/sql.md, "What runs"), read from the engine's
 * own `system.functions`: those of the categories below, which compute on their arguments alone,
 * every aggregate and window function of them with any combinator (`countIf`, `sumOrNull`), and a
 * few of the category "Other". A function of any other category (files, dictionaries, settings,
 * the server's host, introspection, models, AI services), a user-defined one, or one added later
 * without a category is refused.
 */
const CATEGORIES = new Set([
  'Aggregate Functions', 'Arithmetic', 'Arrays', 'Bit', 'Bitmap', 'Comparison', 'Conditional', 'Dates and Times', 'Distance', 'Encoding',
  'Encryption', 'Financial', 'Geo', 'Geo Polygon', 'Hash', 'IP Address', 'JSON', 'Logical', 'Map', 'Mathematical', 'Null',
  'NumericIndexedVector', 'QBit', 'Random Number', 'Rounding', 'String', 'String Replacement', 'String Search', 'String Splitting',
  'Time Series', 'Time Window', 'Tuple', 'Type Conversion', 'URL', 'UUID',
]);

/** Of the category "Other": functions of their arguments, of the query's own rows or of its session's settings. */
const OTHER = new Set([
  'bar', 'blockSize', 'byteSize', 'colorOKLABToSRGB', 'colorOKLCHToSRGB', 'colorSRGBToOKLAB', 'colorSRGBToOKLCH', 'countDigits', 'currentDatabase',
  'defaultValueOfArgumentType', 'defaultValueOfTypeName', 'dumpColumnStructure', 'errorCodeToName', 'finalizeAggregation', 'flipCoordinates',
  'formatReadableDecimalSize', 'formatReadableQuantity', 'formatReadableSize', 'formatReadableTimeDelta', 'getSetting', 'getSettingOrDefault',
  'getSizeOfEnumType', 'getSubcolumn',
  'identity', 'ignore', 'indexHint', 'initializeAggregation', 'isConstant', 'isDecimalOverflow', 'lowCardinalityIndices', 'lowCardinalityKeys',
  'MACNumToString', 'MACStringToNum', 'MACStringToOUI', 'materialize', 'neighbor', 'parseReadableSize', 'parseReadableSizeOrNull',
  'parseReadableSizeOrZero', 'parseTimeDelta', 'rowNumberInAllBlocks', 'rowNumberInBlock', 'runningAccumulate', 'runningDifference',
  'runningDifferenceStartingWithFirstValue', 'throwIf', 'toColumnTypeName', 'toTypeName', 'transform', 'variantElement', 'variantType', 'version',
  'visibleWidth',
]);

/** Functions the parser writes for syntax (`x -> y`, `EXISTS`, `CASE x WHEN`, `::`) that system.functions lists elsewhere or not at all. */
const SYNTAX = new Set(['lambda', 'exists', 'grouping', 'untuple', 'caseWithExpression', '_CAST']);

/** A row of `system.functions`: name, is_aggregate, case_insensitive, alias_to, categories. */
export type FunctionRow = [name: string, aggregate: number, caseInsensitive: number, aliasTo: string, categories: string];

/** The engine's functions and aggregate combinators, read with its own limits. */
export async function loadCatalog(read: Reader): Promise<FunctionCatalog> {
  const lines = (text: string): unknown[] => text.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as unknown);
  const functions = await read("SELECT name, is_aggregate, case_insensitive, alias_to, categories FROM system.functions WHERE origin = 'System'", 'JSONCompactEachRow');
  const combinators = await read('SELECT name FROM system.aggregate_function_combinators WHERE NOT is_internal', 'JSONCompactEachRow');
  return new FunctionCatalog(lines(functions) as FunctionRow[], (lines(combinators) as [string][]).map(([name]) => name));
}

interface Entry {
  aggregate: boolean;
  allowed: boolean;
}

export class FunctionCatalog {
  private readonly exact = new Map<string, Entry>();
  private readonly folded = new Map<string, Entry>();
  /** Longest first, so `OrNull` is tried before `Null` would be. */
  private readonly combinators: string[];

  constructor(rows: readonly FunctionRow[], combinators: readonly string[]) {
    const byName = new Map(rows.map((row) => [row[0], row]));
    for (const [name, aggregate, caseInsensitive, aliasTo, categories] of rows) {
      const target = aliasTo === '' ? undefined : byName.get(aliasTo);
      const [isAggregate, category] = target ? [target[1], target[4]] : [aggregate, categories];
      const entry = { aggregate: isAggregate === 1, allowed: CATEGORIES.has(category) || OTHER.has(target?.[0] ?? name) };
      this.exact.set(name, entry);
      if (caseInsensitive === 1) this.folded.set(name.toLowerCase(), entry);
    }
    this.combinators = [...combinators].sort((a, b) => b.length - a.length);
  }

  /** Whether a query may call `name` as the parser wrote it (a function's name or alias, any case where the engine allows it). */
  allows(name: string): boolean {
    if (SYNTAX.has(name)) return true;
    const entry = this.lookup(name);
    if (entry) return entry.allowed;
    return this.aggregateWithCombinators(name);
  }

  private lookup(name: string): Entry | undefined {
    return this.exact.get(name) ?? this.folded.get(name.toLowerCase());
  }

  /** `sumIfOrNull`: an allowed aggregate function followed by combinators. */
  private aggregateWithCombinators(name: string): boolean {
    for (const suffix of this.combinators) {
      if (!name.endsWith(suffix) || name.length === suffix.length) continue;
      const base = name.slice(0, -suffix.length);
      const entry = this.lookup(base);
      if (entry ? entry.aggregate && entry.allowed : this.aggregateWithCombinators(base)) return true;
    }
    return false;
  }
}
