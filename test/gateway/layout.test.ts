import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

/**
 * The gateway's folders import one way (docs/architecture.md, "Layout of the code"): routes/ on
 * ws/, ingest/ and static/, those on server/, server/ on nothing of the gateway; role.ts composes.
 * Read from the sources' import lines, so a new import against the layering or a cycle fails here.
 */

const root = fileURLToPath(new URL('../../', import.meta.url));
const gateway = join(root, 'gateway');

type Layer = 'server' | 'ingest' | 'static' | 'ws' | 'dashboard' | 'routes' | 'role' | 'sql';

/** What each layer may import besides itself. */
const allowed: Record<Layer, readonly Layer[]> = {
  server: [],
  ingest: ['server'],
  static: ['server'],
  ws: ['server', 'ingest'],
  dashboard: ['static'],
  routes: ['server', 'ingest', 'static', 'ws', 'dashboard'],
  role: ['server', 'ingest', 'static', 'ws', 'dashboard', 'routes'],
  sql: [],
};

/** The layer of a file (a path under gateway/). */
function layerOf(file: string): Layer {
  const top = file.split('/')[0] ?? '';
  if (!file.includes('/')) return 'role';
  if (top in allowed) return top as Layer;
  throw new Error(`gateway/${file}: a folder the layering does not know`);
}

/** Every .ts file under `dir`, as paths relative to gateway/. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [relative(gateway, path)] : [];
  });
}

/** The specifiers of a file's static imports and re-exports (`import … from '…'`, `export … from '…'`, `import '…'`). */
function specifiers(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\s[^;]*?\bfrom\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]/gm)) out.push(m[1] ?? m[2] ?? '');
  return out;
}

/** A cycle of the graph as a path that ends where it starts, or null when there is none. */
function findCycle(graph: ReadonlyMap<string, readonly string[]>): string[] | null {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string): string[] | null => {
    if (state.get(node) === 'done') return null;
    if (state.get(node) === 'open') return [...stack.slice(stack.indexOf(node)), node];
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    stack.pop();
    state.set(node, 'done');
    return null;
  };
  for (const node of graph.keys()) {
    const cycle = visit(node);
    if (cycle) return cycle;
  }
  return null;
}

const files = sources(gateway);
/** Each file's imports: gateway files as paths under gateway/, others as written (packages) or relative to the repository. */
const imports = new Map(
  files.map((file) => {
    const text = readFileSync(join(gateway, file), 'utf8');
    const targets = specifiers(text).map((spec) => (spec.startsWith('.') ? relative(gateway, resolve(dirname(join(gateway, file)), spec)) : spec));
    return [file, targets] as const;
  }),
);
const inGateway = (target: string): boolean => !target.startsWith('..') && target.endsWith('.ts');

t.test('the checks themselves find what they look for', async (t) => {
  t.same(specifiers("import a from './a.ts';\nimport {\n  b,\n  type C,\n} from '../b.ts';\nexport { d } from \"./d.ts\";\nimport './e.ts';\nconst f = 'from';"), [
    './a.ts',
    '../b.ts',
    './d.ts',
    './e.ts',
  ]);
  t.same(findCycle(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']]])), ['a', 'b', 'c', 'a']);
  t.equal(findCycle(new Map([['a', ['b', 'c']], ['b', ['c']], ['c', []]])), null);
  t.ok(files.includes('server/route.ts') && files.includes('role.ts'), 'the sources are found');
  t.ok((imports.get('role.ts') ?? []).includes('server/app.ts'), 'and their imports');
});

t.test('every gateway import resolves to a file', async (t) => {
  const known = new Set(files);
  t.same([...imports].flatMap(([file, targets]) => targets.filter((x) => inGateway(x) && !known.has(x)).map((x) => `${file} imports ${x}`)), []);
});

t.test('no import cycle in gateway/', async (t) => {
  const graph = new Map([...imports].map(([file, targets]) => [file, targets.filter(inGateway)]));
  t.equal(findCycle(graph)?.join(' -> ') ?? null, null);
});

t.test('imports follow the layering', async (t) => {
  const wrong: string[] = [];
  for (const [file, targets] of imports) {
    const from = layerOf(file);
    for (const target of targets.filter(inGateway)) {
      const to = layerOf(target);
      if (to !== from && !allowed[from].includes(to)) wrong.push(`${file} (${from}) imports ${target} (${to})`);
    }
    // Outside the gateway: the engine and the schemas only.
    for (const target of targets.filter((x) => x.startsWith('..'))) {
      if (!/^\.\.\/(engine|schemas)\//.test(target)) wrong.push(`${file} imports ${target}`);
    }
  }
  t.same(wrong, []);
});

t.test('uWebSockets.js is used inside server/uws/ only, ws inside server/node/ only', async (t) => {
  const outside = (pkg: string, dir: string): string[] => [...imports].filter(([file, targets]) => !file.startsWith(dir) && targets.includes(pkg)).map(([file]) => file);
  t.same(outside('uWebSockets.js', 'server/uws/'), []);
  t.same(outside('ws', 'server/node/'), []);
});

t.test('each server is loaded only when it serves: nothing imports server/uws/ or server/node/ statically from outside', async (t) => {
  const wrong = [...imports].flatMap(([file, targets]) =>
    targets.filter((x) => ['server/uws/', 'server/node/'].some((dir) => x.startsWith(dir) && !file.startsWith(dir))).map((x) => `${file} imports ${x}`),
  );
  t.same(wrong, []);
  t.match(readFileSync(join(gateway, 'server/app.ts'), 'utf8'), /await import\('\.\/uws\/serve\.ts'\)/, 'app.ts imports the uWS server when it is chosen');
});
