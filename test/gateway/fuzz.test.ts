import fc from 'fast-check';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import t from 'tap';
import { deployment, type EngineProcess } from '../helpers/engine.ts';
import { NoAnswer, rawRequest, type RawAnswer, type RawRequest } from '../helpers/raw-http.ts';

/**
 * Property-based fuzzing of every operation of the gateway's own OpenAPI document (GET
 * /api/openapi.json of the running process; no route is listed here). Each operation gets requests
 * generated from its schemas: valid bodies, bodies broken in one place, broken JSON text and
 * garbage bytes, query strings in and out of their schemas and badly encoded, path parameters at
 * and past their limits, and assorted keys. Every request goes over its own socket to a real
 * gateway process.
 *
 * A request fails the test when the answer is a 500, when there is no answer within 5 s or the
 * connection closes without one, when the answer's status is not among the operation's responses,
 * when its Content-Type is not the documented one, or when its JSON body does not match the
 * documented schema. The gateway must be alive (/healthz) after every operation and must log no error.
 *
 * FUZZ_SEED=<n> changes the seed (printed with each operation); FUZZ_RUNS=<n> the runs per operation;
 * FUZZ_ONLY=<regexp> limits the run to the matching operations ("POST /api/sdk/batch").
 */

const SEED = Number(process.env['FUZZ_SEED'] ?? 5);
const RUNS = Number(process.env['FUZZ_RUNS'] ?? 300);
/** FUZZ_ONLY=<regexp> fuzzes only the operations whose "METHOD /path" matches. */
const ONLY = process.env['FUZZ_ONLY'] ? new RegExp(process.env['FUZZ_ONLY']) : null;
const TIMEOUT_MS = 5000;
/** Bounds each operation's fast-check run, shrinking included, so the file stays within its timeout. */
const OPERATION_TIME_LIMIT_MS = 20_000;
/** And all of them together (the file's timeout is 300 s, package.json). */
const TOTAL_TIME_LIMIT_MS = 75_000;

// ---------------------------------------------------------------------------------------------
// The document

interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  const?: unknown;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  patternProperties?: Record<string, JsonSchema>;
  propertyNames?: JsonSchema;
  minProperties?: number;
  maxProperties?: number;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
}

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema?: JsonSchema;
}

interface MediaType {
  schema?: JsonSchema;
}

interface Operation {
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content?: Record<string, MediaType> };
  responses?: Record<string, { content?: Record<string, MediaType> }>;
  security?: Record<string, string[]>[];
}

interface OpenApi {
  security?: Record<string, string[]>[];
  components?: { schemas?: Record<string, JsonSchema>; securitySchemes?: Record<string, unknown> };
  paths: Record<string, Record<string, unknown>>;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

interface Op {
  method: string;
  path: string;
  op: Operation;
  pathParams: Parameter[];
  queryParams: Parameter[];
  body: JsonSchema | null;
  /** Which keys the operation takes: none, REST keys only, or SDK and REST keys. */
  auth: 'none' | 'rest' | 'any';
}

function operations(doc: OpenApi): Op[] {
  const ops: Op[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    const shared = (item['parameters'] as Parameter[] | undefined) ?? [];
    for (const method of METHODS) {
      const op = item[method] as Operation | undefined;
      if (op === undefined) continue;
      const params = [...shared, ...(op.parameters ?? [])];
      const security = op.security ?? doc.security ?? [];
      const schemes = security.flatMap((s) => Object.keys(s));
      const auth = schemes.length === 0 ? 'none' : schemes.every((s) => /rest/i.test(s)) ? 'rest' : 'any';
      let body = op.requestBody?.content?.['application/json']?.schema ?? null;
      // The WebSocket path is fuzzed with plain GETs; /metrics and the pages and files take nothing.
      if (path === '/api/sdk/ws') body = null;
      ops.push({
        method: method.toUpperCase(),
        path,
        op,
        pathParams: params.filter((p) => p.in === 'path'),
        queryParams: params.filter((p) => p.in === 'query'),
        body,
        auth,
      });
    }
  }
  return ops;
}

// ---------------------------------------------------------------------------------------------
// Values from JSON Schema

class Generators {
  private readonly validCache = new Map<JsonSchema, fc.Arbitrary<unknown>>();

  constructor(private readonly doc: OpenApi) {}

  resolve(s: JsonSchema): JsonSchema {
    for (let i = 0; s.$ref !== undefined && i < 20; i++) {
      const name = /^#\/components\/schemas\/(.+)$/.exec(s.$ref)?.[1];
      const target = name === undefined ? undefined : this.doc.components?.schemas?.[name];
      if (target === undefined) throw new Error(`cannot resolve ${s.$ref}`);
      s = target;
    }
    return s;
  }

  /** Values valid per `s` (loosely for patterns and formats), small, with strings at their length limit now and then. */
  valid(schema: JsonSchema, depth = 0): fc.Arbitrary<unknown> {
    let arb = this.validCache.get(schema);
    if (arb === undefined) {
      arb = this.validUncached(schema, depth);
      this.validCache.set(schema, arb);
    }
    return arb;
  }

  private validUncached(schema: JsonSchema, depth: number): fc.Arbitrary<unknown> {
    const s = this.resolve(schema);
    if (depth > 8) return fc.constant(null);
    if ('const' in s) return fc.constant(s.const);
    if (s.enum !== undefined && s.enum.length > 0) return fc.constantFrom(...s.enum);
    const branches = s.anyOf ?? s.oneOf;
    if (branches !== undefined && branches.length > 0) return fc.oneof(...branches.map((b) => this.valid(b, depth + 1)));
    if (s.allOf !== undefined && s.allOf.length > 0) return this.valid(this.merged(s), depth + 1);
    const type = Array.isArray(s.type) ? s.type : s.type === undefined ? undefined : [s.type];
    if (type !== undefined && type.length > 1) return fc.oneof(...type.map((one) => this.valid({ ...s, type: one }, depth)));
    switch (type?.[0] ?? (s.properties || s.patternProperties ? 'object' : undefined)) {
      case 'object':
        return this.validObject(s, depth);
      case 'array': {
        const min = s.minItems ?? 0;
        const max = Math.min(s.maxItems ?? min + 3, min + 3);
        return fc.array(s.items ? this.valid(s.items, depth + 1) : fc.jsonValue({ maxDepth: 1 }), { minLength: min, maxLength: max });
      }
      case 'string':
        return this.validString(s);
      case 'integer': {
        const min = s.minimum ?? -1_000_000_000;
        const max = s.maximum ?? 1_000_000_000;
        return fc.oneof(fc.integer({ min, max }), fc.constantFrom(min, max));
      }
      case 'number': {
        const min = s.minimum ?? -1e12;
        const max = s.maximum ?? 1e12;
        return fc.oneof(fc.integer({ min: Math.ceil(Math.max(min, -1e9)), max: Math.floor(Math.min(max, 1e9)) }), fc.double({ min, max, noNaN: true }));
      }
      case 'boolean':
        return fc.boolean();
      case 'null':
        return fc.constant(null);
      default:
        return fc.jsonValue({ maxDepth: 2 });
    }
  }

  /** `allOf` as one schema, loosely: the object keywords of every part together. */
  merged(s: JsonSchema): JsonSchema {
    const { allOf = [], ...rest } = s;
    return allOf.map((part) => this.resolve(part)).reduce<JsonSchema>(
      (all, part) => ({
        ...all,
        ...part,
        properties: { ...all.properties, ...part.properties },
        required: [...(all.required ?? []), ...(part.required ?? [])],
        patternProperties: { ...all.patternProperties, ...part.patternProperties },
      }),
      rest,
    );
  }

  private validObject(s: JsonSchema, depth: number): fc.Arbitrary<unknown> {
    const props = s.properties ?? {};
    const model: Record<string, fc.Arbitrary<unknown>> = {};
    for (const [name, p] of Object.entries(props)) model[name] = this.valid(p, depth + 1);
    const requiredKeys = (s.required ?? []).filter((k) => k in props);
    const fixed = fc.record(model, { requiredKeys });
    const open = this.openValues(s);
    if (open === null) return fixed;
    const room = Math.max(0, (s.maxProperties ?? 4) - Object.keys(props).length);
    const needed = Math.max(0, (s.minProperties ?? 0) - requiredKeys.length);
    const extra = fc.dictionary(this.propertyName(s), this.valid(open, depth + 1), { minKeys: Math.min(needed, room), maxKeys: Math.max(Math.min(room, 4), Math.min(needed, room)) });
    return fc.tuple(fixed, extra).map(([f, e]) => ({ ...e, ...f }));
  }

  /** The schema of properties beyond `properties`, or null when there may be none. */
  private openValues(s: JsonSchema): JsonSchema | null {
    const pattern = s.patternProperties === undefined ? undefined : Object.values(s.patternProperties)[0];
    if (pattern !== undefined) return pattern;
    if (typeof s.additionalProperties === 'object') return s.additionalProperties;
    if (s.additionalProperties === true || (s.additionalProperties === undefined && s.properties === undefined)) return {};
    return null;
  }

  private propertyName(s: JsonSchema): fc.Arbitrary<string> {
    const names = s.propertyNames ?? {};
    const min = Math.max(names.minLength ?? 0, 1);
    const max = Math.min(names.maxLength ?? 16, min + 12);
    const sources = Object.keys(s.patternProperties ?? {});
    const patterns = sources.map((p) => new RegExp(p, 'u'));
    const fits = (k: string): boolean => k.length >= min && k.length <= max && patterns.every((p) => p.test(k));
    // A pattern that says more than "anything on one line" is the source of the names.
    const specific = sources.find((p) => p !== '^.*$' && p !== '.*' && p !== '^.+$');
    if (specific !== undefined) return fc.stringMatching(new RegExp(specific)).filter(fits);
    return fc
      .oneof({ weight: 4, arbitrary: fc.string({ minLength: min, maxLength: max }) }, fc.string({ unit: 'binary', minLength: min, maxLength: max }))
      .filter(fits);
  }

  private validString(s: JsonSchema): fc.Arbitrary<string> {
    const min = s.minLength ?? 0;
    const max = s.maxLength ?? Infinity;
    const fits = (v: string): boolean => {
      const n = [...v].length;
      return n >= min && n <= max && (s.pattern === undefined || new RegExp(s.pattern, 'u').test(v));
    };
    if (s.format === 'date-time') {
      return fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString());
    }
    if (s.format === 'email') return fc.emailAddress().filter(fits);
    if (s.format === 'uri') return fc.webUrl({ validSchemes: ['https'] }).filter(fits);
    if (s.pattern !== undefined) return fc.stringMatching(new RegExp(s.pattern)).filter(fits);
    const options: fc.WeightedArbitrary<string>[] = [
      { weight: 6, arbitrary: fc.string({ minLength: min, maxLength: Math.min(max, min + 12) }) },
      { weight: 3, arbitrary: fc.string({ unit: 'binary', minLength: min, maxLength: Math.min(max, min + 8) }) },
    ];
    if (s.maxLength !== undefined) {
      // At the limit, counted in code points: ASCII, and astral characters (two UTF-16 units each).
      options.push({ weight: 1, arbitrary: fc.constantFrom('x'.repeat(max), '😀'.repeat(max), 'é'.repeat(max)) });
    }
    return fc.oneof(...options);
  }

  /** Values that break `s` at its own level: the wrong type, one past a limit, outside the enum. */
  invalid(schema: JsonSchema): fc.Arbitrary<unknown> {
    const s = this.resolve(schema);
    const out: unknown[] = [null, true, [], {}, 'x', 0, -1, 1.5, 1e308, -1e308, 2 ** 53 + 1, '\ud800', '😀'];
    if (s.minLength !== undefined && s.minLength > 0) out.push('x'.repeat(s.minLength - 1));
    if (s.maxLength !== undefined) out.push('x'.repeat(s.maxLength + 1), '😀'.repeat(s.maxLength + 1), `${'x'.repeat(s.maxLength)}\ud800`);
    if (s.minimum !== undefined) out.push(s.minimum - 1, s.minimum - 0.5);
    if (s.maximum !== undefined) out.push(s.maximum + 1, s.maximum + 0.5);
    if (s.maxItems !== undefined && s.maxItems <= 1000) out.push(Array.from({ length: s.maxItems + 1 }, () => ({})));
    if (s.minItems !== undefined && s.minItems > 0) out.push([]);
    if ('const' in s) out.push(`${String(s.const)}x`, String(s.const).toLowerCase());
    if (s.format !== undefined) out.push('not-a-' + s.format, '2026-13-45T99:99:99Z', 'https://', 'a@', '');
    if (s.pattern !== undefined) out.push('', ' ', '+', 'ffff');
    return fc.oneof(fc.constantFrom(...out), fc.jsonValue({ maxDepth: 2 }));
  }

  /** Values valid per `s` except in one place, somewhere in the tree. */
  broken(schema: JsonSchema, depth = 0): fc.Arbitrary<unknown> {
    const resolved = this.resolve(schema);
    const s = resolved.allOf !== undefined && resolved.allOf.length > 0 ? this.merged(resolved) : resolved;
    if (depth > 6) return this.invalid(s);
    const branches = s.anyOf ?? s.oneOf;
    if (branches !== undefined && branches.length > 0) {
      return fc.oneof(this.invalid(s), ...branches.map((b) => this.broken(b, depth + 1)));
    }
    const type = Array.isArray(s.type) ? s.type[0] : s.type;
    if (type === 'object' || s.properties !== undefined) return this.brokenObject(s, depth);
    if (type === 'array' && s.items !== undefined) {
      const items = s.items;
      return fc.oneof(
        this.invalid(s),
        fc.tuple(fc.array(this.valid(items, depth + 1), { maxLength: 2 }), this.broken(items, depth + 1), fc.nat(2)).map(([good, bad, at]) => {
          const list: unknown[] = [...good];
          list.splice(at, 0, bad);
          return list;
        }),
      );
    }
    return this.invalid(s);
  }

  private brokenObject(s: JsonSchema, depth: number): fc.Arbitrary<unknown> {
    const whole = this.valid(s, depth) as fc.Arbitrary<Record<string, unknown>>;
    const props = s.properties ?? {};
    const options: fc.Arbitrary<unknown>[] = [this.invalid(s)];
    const required = s.required ?? [];
    if (required.length > 0) {
      options.push(
        fc.tuple(whole, fc.constantFrom(...required)).map(([v, key]) => {
          const copy = { ...v };
          delete copy[key];
          return copy;
        }),
      );
    }
    // An extra property, also one named like a prototype member (an own property in the JSON text).
    options.push(
      fc.tuple(whole, fc.constantFrom('extra', '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', ''), fc.jsonValue({ maxDepth: 2 })).map(([v, key, value]) => {
        const copy = { ...v };
        Object.defineProperty(copy, key, { value, enumerable: true, configurable: true, writable: true });
        return copy;
      }),
    );
    const keys = Object.keys(props);
    if (keys.length > 0) {
      options.push(
        fc.constantFrom(...keys).chain((key) =>
          fc.tuple(whole, this.broken(props[key] ?? {}, depth + 1)).map(([v, bad]) => {
            const copy = { ...v };
            copy[key] = bad;
            return copy;
          }),
        ),
      );
    }
    const open = s.patternProperties === undefined ? undefined : Object.values(s.patternProperties)[0];
    if (open !== undefined) {
      const maxName = s.propertyNames?.maxLength ?? 128;
      options.push(
        fc.tuple(whole, fc.constantFrom('k', '__proto__', '', 'x'.repeat(maxName), 'x'.repeat(maxName + 1), '\ud800'), this.broken(open, depth + 1)).map(([v, key, bad]) => {
          const copy = { ...v };
          Object.defineProperty(copy, key, { value: bad, enumerable: true, configurable: true, writable: true });
          return copy;
        }),
      );
      if (s.maxProperties !== undefined) {
        const n = s.maxProperties + 1;
        options.push(whole.map((v) => ({ ...v, ...Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i])) })));
      }
    }
    return fc.oneof(...options);
  }
}

// ---------------------------------------------------------------------------------------------
// Requests

interface Body {
  bytes: Buffer;
  contentType: string | null;
  /** Written in this many pieces, a few milliseconds apart. */
  pieces: number;
  /** Sent with Transfer-Encoding: chunked (in `pieces` chunks) instead of Content-Length. */
  chunked: boolean;
}

function chunkedEncoding(bytes: Buffer, chunks: number): Buffer {
  const size = Math.max(1, Math.ceil(bytes.length / chunks));
  const parts: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += size) {
    const chunk = bytes.subarray(at, at + size);
    parts.push(Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n'));
  }
  parts.push(Buffer.from('0\r\n\r\n'));
  return Buffer.concat(parts);
}

const RAW = '\u0001raw\u0001';

/** A JSON text with `literal` in place of the property `key` of `value` (an object) or of the whole value. */
function withLiteral(value: unknown, key: string | null, literal: string): string {
  if (key === null || value === null || typeof value !== 'object' || Array.isArray(value)) return literal;
  return JSON.stringify({ ...value, [key]: RAW }).replace(JSON.stringify(RAW), literal);
}

function bodies(g: Generators, schema: JsonSchema): fc.Arbitrary<Body> {
  const s = g.resolve(schema);
  const keys = [...Object.keys(s.properties ?? {}), ...(s.required ?? [])];
  const key = keys.length === 0 ? fc.constant(null) : fc.option(fc.constantFrom(...keys), { freq: 4 });
  const text = (arb: fc.Arbitrary<string>): fc.Arbitrary<Buffer> => arb.map((x) => Buffer.from(x, 'utf8'));
  const deep = (n: number, inner: string): string => '['.repeat(n) + inner + ']'.repeat(n);
  const literals = [
    '1e400',
    '-1e400',
    '123456789012345678901234567890123456789',
    '1e-400',
    '-0',
    '"\\ud800"',
    '"a\\udfffb"',
    '"\\ud83d"',
    '"\\u0000"',
    '{"\\ud800":1}',
    '{"__proto__":{"polluted":1}}',
    '{"__proto__":null}',
    deep(64, '1'),
    deep(5000, ''),
    deep(100_000, ''),
    deep(20_000, '"\\ud800"'),
    '{"a":'.repeat(5000) + '1' + '}'.repeat(5000),
    '{"a":'.repeat(20_000) + '1' + '}'.repeat(20_000),
    '[{"a":'.repeat(3000) + '[]' + '}]'.repeat(3000),
    'NaN',
    'undefined',
  ];
  const fromValues = fc.oneof(
    { weight: 9, arbitrary: text(g.valid(s).map((v) => JSON.stringify(v) ?? 'null')) },
    { weight: 6, arbitrary: text(g.broken(s).map((v) => JSON.stringify(v) ?? 'null')) },
    // Broken JSON text: a literal JSON.stringify never writes, truncation, duplicate keys, a BOM.
    { weight: 4, arbitrary: text(fc.tuple(g.valid(s), key, fc.constantFrom(...literals)).map(([v, k, lit]) => withLiteral(v, k, lit))) },
    {
      weight: 1,
      arbitrary: text(
        fc.tuple(g.valid(s), fc.nat()).map(([v, at]) => {
          const full = JSON.stringify(v) ?? '';
          return full.slice(0, full.length === 0 ? 0 : at % full.length);
        }),
      ),
    },
    {
      weight: 1,
      arbitrary: text(
        fc.tuple(g.valid(s), key, fc.jsonValue({ maxDepth: 1 })).map(([v, k, other]) => {
          const full = JSON.stringify(v) ?? '';
          if (k === null || !full.startsWith('{') || full === '{}') return full;
          return `${full.slice(0, -1)},${JSON.stringify(k)}:${JSON.stringify(other) ?? 'null'}}`;
        }),
      ),
    },
    { weight: 1, arbitrary: text(g.valid(s).map((v) => `\ufeff${JSON.stringify(v) ?? ''}`)) },
    // Garbage: random bytes, invalid UTF-8 (alone and inside a JSON string), JSON-ish characters.
    { weight: 2, arbitrary: fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)) },
    {
      weight: 2,
      arbitrary: fc
        .constantFrom([0xff], [0xfe, 0xff], [0xc3], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82], [0x00])
        .chain((bad) =>
          fc.constantFrom(
            Buffer.from(bad),
            Buffer.concat([Buffer.from(`{"${keys[0] ?? 'k'}":"`), Buffer.from(bad), Buffer.from('"}')]),
            Buffer.concat([Buffer.from('{"'), Buffer.from(bad), Buffer.from('":1}')]),
          ),
        ),
    },
    { weight: 1, arbitrary: text(fc.constantFrom('', ' ', 'null', '[]', '{}', 'true', '0', '""', '{', '}', '{"":', '[{}]', '{}{}', '{} x')) },
    { weight: 1, arbitrary: text(fc.string({ unit: fc.constantFrom(...'{}[]":,0123456789.-+eE nultrf\\'.split('')), maxLength: 40 })) },
  );
  const contentType = fc.oneof(
    { weight: 14, arbitrary: fc.constant<string | null>('application/json') },
    {
      weight: 4,
      arbitrary: fc.constantFrom<string | null>(
        'application/json; charset=utf-8',
        'Application/JSON',
        'application/json;charset="UTF-8"',
        'application/json; charset=latin1',
        'application/json; charset=utf-16',
        'application/json; boundary=x',
        'application/json;;;',
        'application/json, text/plain',
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        '',
        ';',
        null,
      ),
    },
    { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
  );
  const pieces = fc.oneof({ weight: 6, arbitrary: fc.constant(1) }, fc.integer({ min: 2, max: 4 }));
  return fc.record({ bytes: fromValues, contentType, pieces, chunked: fc.oneof({ weight: 7, arbitrary: fc.constant(false) }, fc.constant(true)) });
}

/** encodeURIComponent, except that a lone surrogate becomes its (invalid) three UTF-8-style bytes, %ED%A0%80 for U+D800. */
function pctEncode(value: string): string {
  if (value.isWellFormed()) return encodeURIComponent(value);
  let out = '';
  for (const char of value) {
    const code = char.codePointAt(0) ?? 0;
    if (code < 0xd800 || code > 0xdfff) out += encodeURIComponent(char);
    else out += [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
  }
  return out;
}

/** Percent-encoding as forms do: UTF-8, space as `+`. */
const formEncode = (value: string): string => pctEncode(value).replace(/%20/g, '+');

function queryPart(g: Generators, p: Parameter, clean: boolean): fc.Arbitrary<string> {
  const schema = p.schema ?? {};
  const asText = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));
  const name = encodeURIComponent(p.name);
  const good = fc.tuple(g.valid(schema).map(asText), fc.boolean()).map(([v, form]) => `${name}=${form ? formEncode(v) : pctEncode(v)}`);
  if (clean) return good;
  const bad = fc.tuple(g.invalid(schema).map(asText), fc.boolean()).map(([v, form]) => `${name}=${form ? formEncode(v) : pctEncode(v)}`);
  const encoding = fc.constantFrom(`${name}=%zz`, `${name}=%`, `${name}=%e9`, `${name}=%c3%28`, `${name}=%ED%A0%80`, `${name}=+`, `${name}=%2B`, `${name}=`, name, `${name}=a=b`);
  return fc.oneof({ weight: 6, arbitrary: good }, { weight: 3, arbitrary: bad }, { weight: 1, arbitrary: encoding });
}

/**
 * Query strings: half of them clean (declared parameters with valid values, so the routes get past
 * validation), the rest with values out of their schemas, bad encodings, repeated and unknown parameters.
 */
function queries(g: Generators, params: Parameter[]): fc.Arbitrary<string> {
  const declared = (clean: boolean): fc.Arbitrary<string[]> =>
    fc
      .tuple(...params.map((p) => (p.required ? queryPart(g, p, clean).map((x) => [x]) : fc.option(queryPart(g, p, clean), { freq: 2 }).map((x) => (x === null ? [] : [x])))))
      .map((parts) => parts.flat());
  const noise = fc.array(
    fc.oneof(
      fc.constantFrom('%zz', '%', '%=1', '=', '=x', '&', '+', '++=+', 'unknown=1', '__proto__=1', 'constructor=x', 'a[]=1', 'a%00=1', '%e9=1', 'x'.repeat(3000)),
      fc.tuple(fc.string({ unit: 'binary', maxLength: 8 }), fc.string({ unit: 'binary', maxLength: 8 })).map(([k, v]) => `${formEncode(k)}=${formEncode(v)}`),
      // A declared parameter given again.
      params.length === 0 ? fc.constant('limit=1') : fc.constantFrom(...params).chain((p) => queryPart(g, p, false)),
    ),
    { minLength: 1, maxLength: 2 },
  );
  const dirty = fc
    .tuple(declared(false), fc.oneof({ weight: 2, arbitrary: fc.constant<string[]>([]) }, noise), fc.shuffledSubarray(['?', '&'], { minLength: 0 }))
    .map(([parts, extra, odd]) => {
      const joined = [...parts, ...extra].join('&');
      if (joined === '') return odd.includes('?') ? '?' : '';
      return `?${odd.includes('&') ? '&' : ''}${joined}`;
    });
  const clean = declared(true).map((parts) => (parts.length === 0 ? '' : `?${parts.join('&')}`));
  return fc.oneof(clean, dirty);
}

function pathValues(): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 5, arbitrary: fc.string({ minLength: 1, maxLength: 16 }).map(pctEncode) },
    { weight: 3, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 16 }).map(pctEncode) },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        '',
        '%20',
        '+',
        'a'.repeat(128),
        'a'.repeat(129),
        encodeURIComponent('😀'.repeat(128)),
        encodeURIComponent('😀'.repeat(129)),
        encodeURIComponent('é'.repeat(129)),
        '%61'.repeat(128),
        '%61'.repeat(129),
        '%2F',
        'a%2Fb',
        '%2F..%2F..',
        '%zz',
        '%',
        'a%',
        '%e9',
        '%c3%28',
        '%ED%A0%80',
        '%F4%90%80%80',
        '%00',
        '..',
        '.',
        '%2e%2e',
        '__proto__',
        'constructor',
        'hasOwnProperty',
        'All',
        '*',
        '%2A',
        ':name',
        encodeURIComponent('\u202e\u0000\ufeff'),
      ),
    },
  );
}

/** The Authorization header: right keys mostly (so requests get past authentication), and every way to get it wrong. */
function authorization(op: Op, keys: { sdk: string; rest: string }): fc.Arbitrary<string | null> {
  const wrong = fc.constantFrom<string | null>(
    null,
    '',
    'Bearer',
    'Bearer ',
    'bearer ' + keys.rest,
    'BEARER ' + keys.sdk,
    'Bearer  ' + keys.rest,
    'Bearer ' + keys.rest + ' ',
    'Bearer ' + keys.rest + 'x',
    'Bearer ' + keys.rest.slice(0, -1),
    'Bearer ' + keys.sdk.toUpperCase(),
    'Basic ' + Buffer.from(`${keys.rest}:`).toString('base64'),
    keys.rest,
    'Bearer sdk_',
    'Bearer rest_',
    'Bearer ' + 'a'.repeat(2000),
    'Bearer ' + keys.rest + ', Bearer ' + keys.sdk,
  );
  const random = fc.string({ maxLength: 60 }).map((s) => (s.startsWith(' ') ? `Bearer${s}` : `Bearer ${s}`));
  const rest = fc.constant<string | null>(`Bearer ${keys.rest}`);
  const sdk = fc.constant<string | null>(`Bearer ${keys.sdk}`);
  if (op.auth === 'rest') return fc.oneof({ weight: 8, arbitrary: rest }, { weight: 1, arbitrary: sdk }, { weight: 2, arbitrary: wrong }, { weight: 1, arbitrary: random });
  if (op.auth === 'any') return fc.oneof({ weight: 5, arbitrary: sdk }, { weight: 4, arbitrary: rest }, { weight: 2, arbitrary: wrong }, { weight: 1, arbitrary: random });
  return fc.oneof(fc.constant(null), rest, wrong, random);
}

function requests(g: Generators, op: Op, keys: { sdk: string; rest: string }): fc.Arbitrary<RawRequest> {
  const names = op.pathParams.map((p) => p.name);
  const params = fc.tuple(...names.map(() => pathValues()));
  const identity = fc.oneof(
    { weight: 6, arbitrary: fc.constant<string | null>(null) },
    fc.string({ unit: fc.constantFrom(...'0123456789abcdef'.split('')), minLength: 64, maxLength: 64 }),
    fc.string({ maxLength: 80 }),
    fc.constant(''),
  );
  const body = op.body === null ? fc.constant(null) : bodies(g, op.body);
  return fc.record({ values: params, query: queries(g, op.queryParams), auth: authorization(op, keys), identity, body }).map(({ values, query, auth, identity, body }) => {
    let target = op.path;
    names.forEach((name, i) => (target = target.replace(`{${name}}`, values[i] ?? '')));
    const headers: [string, string][] = [];
    if (auth !== null) headers.push(['Authorization', auth]);
    if (identity !== null) headers.push(['X-Identity-Hash', identity]);
    const req: RawRequest = { method: op.method, target: target + query, headers };
    if (body !== null) {
      if (body.contentType !== null) headers.push(['Content-Type', body.contentType]);
      if (body.chunked) {
        headers.push(['Transfer-Encoding', 'chunked']);
        req.body = chunkedEncoding(body.bytes, body.pieces);
        req.contentLength = false;
      } else {
        req.body = body.bytes;
        req.pieces = body.pieces;
      }
    }
    return req;
  });
}

// ---------------------------------------------------------------------------------------------
// Answers

class Contract {
  private readonly ajv = new Ajv({ strict: false, allErrors: true });
  private readonly compiled = new Map<JsonSchema, ValidateFunction>();

  constructor(doc: OpenApi) {
    addFormats.default(this.ajv);
    // Formats of the document that ajv-formats does not know (cursors) are not checked.
    const formats = new Set<string>();
    JSON.stringify(doc, (key, value: unknown) => {
      if (key === 'format' && typeof value === 'string') formats.add(value);
      return value;
    });
    for (const f of formats) if (!this.ajv.formats[f]) this.ajv.addFormat(f, true);
    this.ajv.addSchema({ $id: 'openapi.json', components: doc.components ?? {} });
  }

  /** What is wrong with `answer` as an answer of `op`, or null. */
  problem(op: Op, answer: RawAnswer): string | null {
    if (answer.status === 500) return 'a 500 answer';
    const responses = op.op.responses ?? {};
    const documented = responses[String(answer.status)] ?? responses[`${String(answer.status)[0]}XX`] ?? responses['default'];
    if (documented === undefined) return `status ${answer.status} is not among the documented responses (${Object.keys(responses).join(', ')})`;
    const content = documented.content;
    if (content === undefined || Object.keys(content).length === 0) return null;
    const media = (answer.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    const entry = content[media];
    if (entry === undefined) return `Content-Type ${JSON.stringify(answer.headers['content-type'] ?? null)} is not documented for ${answer.status} (${Object.keys(content).join(', ')})`;
    if (media !== 'application/json' || entry.schema === undefined) return null;
    let body: unknown;
    try {
      body = JSON.parse(answer.body.toString('utf8'));
    } catch {
      return `the ${answer.status} body is not JSON`;
    }
    const validate = this.validator(entry.schema);
    if (validate(body)) return null;
    return `the ${answer.status} body does not match its schema: ${this.ajv.errorsText(validate.errors)}`;
  }

  private validator(schema: JsonSchema): ValidateFunction {
    let validate = this.compiled.get(schema);
    if (validate === undefined) {
      const text = JSON.stringify(schema).replace(/"#\/components\//g, '"openapi.json#/components/');
      validate = this.ajv.compile(JSON.parse(text) as object);
      this.compiled.set(schema, validate);
    }
    return validate;
  }
}

/** The request as text that can be pasted into a report (`printf ... | nc`). */
function describe(req: RawRequest): string {
  const body = req.body;
  const shown =
    body === undefined
      ? ''
      : body.length > 300
        ? ` body(${body.length} bytes) starts ${JSON.stringify(body.subarray(0, 120).toString('latin1'))}`
        : ` body(hex) ${body.toString('hex')} = ${JSON.stringify(body.toString('latin1'))}`;
  const headers = req.headers.map(([n, v]) => `${n}: ${v.length > 120 ? `${v.slice(0, 120)}...(${v.length})` : v}`).join(' | ');
  return `${req.method} ${req.target.length > 300 ? `${req.target.slice(0, 300)}...(${req.target.length})` : req.target} [${headers}]${shown}${req.pieces && req.pieces > 1 ? ` in ${req.pieces} pieces` : ''}`;
}

async function alive(gw: EngineProcess): Promise<string | null> {
  if (gw.proc.exitCode !== null || gw.proc.signalCode !== null) return `the gateway exited (${gw.proc.exitCode ?? gw.proc.signalCode})`;
  try {
    const answer = await rawRequest(gw.port, { method: 'GET', target: '/healthz', headers: [] }, TIMEOUT_MS);
    return answer.status === 200 ? null : `/healthz answered ${answer.status}`;
  } catch (err) {
    return `/healthz: ${(err as Error).message}`;
  }
}

// ---------------------------------------------------------------------------------------------

t.test('every documented operation survives fuzzed requests within its documented answers', async (t) => {
  const d = await deployment(t);
  const gw = await d.start(['gateway']);
  const keys = { sdk: d.project.sdk_key, rest: d.project.rest_key };
  const docAnswer = await rawRequest(gw.port, { method: 'GET', target: '/api/openapi.json', headers: [] });
  t.equal(docAnswer.status, 200, 'the document is served');
  const doc = JSON.parse(docAnswer.body.toString('utf8')) as OpenApi;
  const ops = operations(doc);
  t.ok(ops.length > 10, `${ops.length} operations documented`);
  const g = new Generators(doc);
  const contract = new Contract(doc);

  // The query routes open the embedded ClickHouse on first use: let that happen before the clock runs.
  const warm = Date.now();
  for (const path of ['/api/deliveries', '/api/events']) {
    while (Date.now() - warm < 30_000) {
      const answer = await rawRequest(gw.port, { method: 'GET', target: path, headers: [['Authorization', `Bearer ${keys.rest}`]] }, 30_000).catch(() => null);
      if (answer !== null && answer.status !== 503) break;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  t.comment(`ClickHouse warm after ${Date.now() - warm} ms; seed ${SEED}, ${RUNS} runs per operation`);

  const fuzzStart = Date.now();
  for (const [index, op] of ops.entries()) {
    const name = `${op.method} ${op.path}`;
    if (ONLY !== null && !ONLY.test(name)) continue;
    const seed = SEED + index * 7919;
    const statuses = new Map<number, number>();
    const started = Date.now();
    const property = fc.asyncProperty(requests(g, op, keys), async (req) => {
      let answer: RawAnswer;
      try {
        answer = await rawRequest(gw.port, req, TIMEOUT_MS);
      } catch (err) {
        if (!(err instanceof NoAnswer)) throw err;
        throw new Error(`${err.message}; ${(await alive(gw)) ?? 'the gateway is still alive'}\n  request: ${describe(req)}`);
      }
      statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
      const problem = contract.problem(op, answer);
      if (problem !== null) {
        throw new Error(`${problem}\n  request: ${describe(req)}\n  answer: ${answer.status} ${answer.body.toString('utf8').slice(0, 600)}`);
      }
    });
    const runs = op.body === null ? Math.ceil(RUNS * 0.6) : RUNS;
    const left = Math.max(1000, (TOTAL_TIME_LIMIT_MS - (Date.now() - fuzzStart)) / (ops.length - index));
    const limit = Math.min(OPERATION_TIME_LIMIT_MS, left);
    const details = await fc.check(property, { numRuns: runs, seed, interruptAfterTimeLimit: limit, markInterruptAsFailure: false });
    const seen = [...statuses.entries()].sort(([a], [b]) => a - b).map(([s, n]) => `${s}×${n}`).join(' ');
    t.comment(`${name}: ${details.numRuns} runs in ${Date.now() - started} ms (seed ${seed}): ${seen}`);
    if (details.failed) {
      // The error names the (shrunk) request and what was wrong with its answer.
      const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
      t.fail(
        `${name}: failed after ${details.numRuns} runs, shrunk ${details.numShrinks} times ` +
          `(replay: FUZZ_SEED=${SEED} FUZZ_ONLY='${name}'; fast-check seed ${details.seed}, path ${JSON.stringify(details.counterexamplePath)})\n  ${error}`,
      );
    } else {
      t.pass(name);
    }
    const down = await alive(gw);
    if (down !== null) {
      t.fail(`after ${name}: ${down}`);
      return;
    }
  }

  // Requests of all operations at once, 16 in flight: the same checks, now with interleavings.
  if (ONLY === null) {
    const mixed = fc.array(fc.oneof(...ops.map((op) => requests(g, op, keys).map((req) => ({ op, req })))), { minLength: 16, maxLength: 16 });
    const started = Date.now();
    const details = await fc.check(
      fc.asyncProperty(mixed, async (batch) => {
        const answers = await Promise.all(batch.map(({ req }) => rawRequest(gw.port, req, TIMEOUT_MS).catch((err: Error) => err)));
        const problems: string[] = [];
        answers.forEach((answer, i) => {
          const sent = batch[i];
          if (sent === undefined) return;
          const problem = answer instanceof Error ? answer.message : contract.problem(sent.op, answer);
          if (problem !== null) problems.push(`${problem}\n  request: ${describe(sent.req)}`);
        });
        if (problems.length > 0) throw new Error(`${problems.length} of ${batch.length} concurrent requests: ${problems.join('\n')}`);
      }),
      { numRuns: Math.ceil(RUNS / 5), seed: SEED, interruptAfterTimeLimit: OPERATION_TIME_LIMIT_MS, markInterruptAsFailure: false, endOnFailure: true },
    );
    t.comment(`mixed: ${details.numRuns} batches of 16 concurrent requests in ${Date.now() - started} ms (seed ${SEED})`);
    const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
    t.notOk(details.failed, `concurrent requests of all operations${details.failed ? `: ${error}` : ''}`);
    const down = await alive(gw);
    if (down !== null) {
      t.fail(`after the concurrent requests: ${down}`);
      return;
    }
  }

  // Every path with a method it does not take: 405, as documented for each of its operations.
  const byPath = new Map<string, Op[]>();
  for (const op of ops) byPath.set(op.path, [...(byPath.get(op.path) ?? []), op]);
  for (const [path, pathOps] of byPath) {
    const target = path.replace(/\{[^}]+\}/g, 'x');
    for (const method of METHODS.map((m) => m.toUpperCase()).filter((m) => !pathOps.some((op) => op.method === m))) {
      const req: RawRequest = { method, target, headers: [['Authorization', `Bearer ${keys.rest}`], ['Content-Type', 'application/json']], body: Buffer.from('{}') };
      const answer = await rawRequest(gw.port, req, TIMEOUT_MS).catch((err: Error) => err);
      if (answer instanceof Error) {
        t.fail(`${method} ${path}: ${answer.message}`);
        continue;
      }
      const op = pathOps[0];
      const problem = op === undefined ? null : contract.problem(op, answer);
      t.ok(answer.status === 405 && problem === null, `${method} ${target}: ${answer.status}${problem === null ? '' : `, ${problem}`}`);
    }
  }
  t.equal(await alive(gw), null, 'the gateway is alive at the end');
  // A bug caught and answered (or a failure a handler swallowed) is logged at level error.
  t.same(gw.logs.filter((line) => line['level'] === 'error').slice(0, 5), [], 'the gateway logged no error');
});
