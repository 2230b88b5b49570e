import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import t from 'tap';

/**
 * The rooms of the code import one way (docs/architecture.md, "Layout of the code"): each room may
 * import the rooms its rule lists and nothing above it, and no file is on an import circle. Read
 * from the sources' import lines, so a new import against the rules fails here; eslint.config.js
 * states the same boundaries for the editor.
 */

const root = fileURLToPath(new URL('../../', import.meta.url));
const ROOMS = ['schemas', 'engine', 'gateway', 'actors', 'bin', 'simulators', 'scripts', 'bench', 'sdk', 'test'];

/**
 * What each room may import besides itself, by path prefix; the longest prefix naming a file is
 * its room. Under engine/infra/ the order is process, validation, scripts, redis, clickhouse,
 * outbound, runner; the owners of state in engine/state/ stand on all of it.
 */
const rules: Record<string, readonly string[]> = {
  schemas: [],
  'engine/infra/process': ['schemas'],
  'engine/infra/validation': ['schemas', 'engine/infra/process'],
  'engine/infra/scripts': ['schemas', 'engine/infra/process'],
  'engine/infra/redis': ['schemas', 'engine/infra/process', 'engine/infra/scripts'],
  'engine/infra/clickhouse': ['schemas', 'engine/infra/process', 'engine/infra/validation'],
  'engine/infra/outbound': ['schemas', 'engine/infra/process'],
  'engine/infra/runner': ['schemas', 'engine/infra/process', 'engine/infra/validation', 'engine/infra/scripts', 'engine/infra/redis', 'engine/infra/clickhouse'],
  'engine/state/users': ['schemas', 'engine/infra'],
  'engine/state/keys': ['schemas', 'engine/infra'],
  'engine/state/segments': ['schemas', 'engine/infra', 'engine/state/keys'],
  'engine/state/templates': ['schemas', 'engine/infra'],
  'engine/state/webhooks': ['schemas', 'engine/infra'],
  'engine/state/notifications': ['schemas', 'engine/infra', 'engine/state/users', 'engine/state/keys', 'engine/state/segments', 'engine/state/templates'],
  gateway: ['schemas', 'engine'],
  'actors/partition': ['schemas', 'engine'],
  'actors/recorder': ['schemas', 'engine'],
  'actors/fanout': ['schemas', 'engine'],
  'actors/dispatch': ['schemas', 'engine'],
  'actors/scheduler': ['schemas', 'engine'],
  'actors/webhooks': ['schemas', 'engine'],
  bin: ['schemas', 'engine', 'gateway', 'actors'],
  simulators: ['schemas', 'engine'],
  scripts: ['schemas', 'engine', 'gateway', 'actors', 'bin', 'simulators', 'bench'],
  bench: ['schemas', 'engine', 'gateway', 'actors', 'bin', 'simulators', 'scripts'],
  sdk: [],
  test: ROOMS,
};

/** Inside gateway/, one concern per folder (the table of "Layout of the code"). */
const gatewayLayers: Record<string, readonly string[]> = {
  'gateway/server': [],
  'gateway/ingest': ['gateway/server'],
  'gateway/static': ['gateway/server'],
  'gateway/ws': ['gateway/server', 'gateway/ingest'],
  'gateway/dashboard': ['gateway/static'],
  'gateway/routes': ['gateway/server', 'gateway/ingest', 'gateway/static', 'gateway/ws', 'gateway/dashboard'],
  'gateway/sql': [],
  'gateway/role.ts': ['gateway/server', 'gateway/ingest', 'gateway/static', 'gateway/ws', 'gateway/dashboard', 'gateway/routes'],
};

const within = (path: string, prefix: string): boolean => path === prefix || path.startsWith(`${prefix}/`);

/** The longest prefix of `table` that holds `file`, or undefined. */
function roomOf(file: string, table: Record<string, unknown>): string | undefined {
  return Object.keys(table)
    .filter((prefix) => within(file, prefix))
    .sort((a, b) => b.length - a.length)[0];
}

/** Every .ts file of the rooms, as paths relative to the repository (the dashboard's browser client has its own build). */
function sources(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return entry.name === 'node_modules' || path === 'gateway/dashboard/client' ? [] : sources(path);
    return /\.m?ts$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

interface Import {
  spec: string;
  /** `import()` of a literal: loaded when run, so it takes no part in a circle. */
  lazy: boolean;
}

/** The imports of a file: static imports and re-exports (`import type` included), `import '…'`, and `import('…')` of a literal. */
function specifiers(text: string): Import[] {
  const out: Import[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\s[^;]*?\bfrom\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm)) {
    out.push({ spec: m[1] ?? m[2] ?? m[3] ?? '', lazy: m[3] !== undefined });
  }
  return out;
}

interface Edge {
  from: string;
  to: string;
  lazy: boolean;
}

/** Each file's imports of our own files, as repository paths. */
function importGraph(files: readonly string[]): Edge[] {
  return files.flatMap((from) =>
    specifiers(readFileSync(join(root, from), 'utf8'))
      .filter(({ spec }) => spec.startsWith('.'))
      .map(({ spec, lazy }) => ({ from, to: relative(root, resolve(dirname(join(root, from)), spec)), lazy })),
  );
}

/** The edges against the rooms' rules, as readable lines. */
function violations(edges: readonly Edge[]): string[] {
  const wrong: string[] = [];
  for (const { from, to } of edges) {
    const fromRoom = roomOf(from, rules);
    const toRoom = roomOf(to, rules);
    if (fromRoom === undefined || toRoom === undefined) {
      wrong.push(`${from} imports ${to}: a room without a rule`);
      continue;
    }
    if (fromRoom !== toRoom && !rules[fromRoom]?.some((allowed) => within(toRoom, allowed))) wrong.push(`${from} (${fromRoom}) imports ${to} (${toRoom})`);
    const fromLayer = roomOf(from, gatewayLayers);
    const toLayer = roomOf(to, gatewayLayers);
    if (fromLayer !== undefined && toLayer !== undefined && fromLayer !== toLayer && !gatewayLayers[fromLayer]?.includes(toLayer)) {
      wrong.push(`${from} (${fromLayer}) imports ${to} (${toLayer})`);
    }
  }
  return wrong;
}

/** Imports of an owner's key builders (`redis-keys.ts`) from outside the owner's folder; the tests may read any key. */
function foreignKeys(edges: readonly Edge[]): string[] {
  return edges.filter((e) => e.to.endsWith('/redis-keys.ts') && !within(e.from, dirname(e.to)) && !within(e.from, 'test')).map((e) => `${e.from} imports ${e.to}`);
}

/** A circle of the graph as a path that ends where it starts, or null when there is none. */
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

/** The static imports as a graph. */
function staticGraph(edges: readonly Edge[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const { from, to, lazy } of edges) if (!lazy) graph.set(from, [...(graph.get(from) ?? []), to]);
  return graph;
}

const files = ROOMS.flatMap(sources);
const edges = importGraph(files);

t.test('the checks find what they look for', async (t) => {
  t.same(specifiers("import a from './a.ts';\nimport {\n  b,\n  type C,\n} from '../b.ts';\nexport { d } from \"./d.ts\";\nimport './e.ts';\nconst f = 'from';\nawait import" + "('./g.ts');"), [
    { spec: './a.ts', lazy: false },
    { spec: '../b.ts', lazy: false },
    { spec: './d.ts', lazy: false },
    { spec: './e.ts', lazy: false },
    { spec: './g.ts', lazy: true },
  ]);
  t.same(findCycle(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']]])), ['a', 'b', 'c', 'a']);
  t.equal(findCycle(new Map([['a', ['b', 'c']], ['b', ['c']], ['c', []]])), null);
  t.ok(files.includes('engine/infra/redis/topology.ts') && files.includes('gateway/role.ts') && files.includes('bin/main.ts'), 'the sources are found');
  t.ok(edges.some((e) => e.from === 'bin/main.ts' && e.to === 'gateway/role.ts' && e.lazy), 'and their imports');
});

t.test('engine/ holds rooms, no code file at its root', async (t) => {
  t.same(
    readdirSync(join(root, 'engine')).filter((name) => name.endsWith('.ts')),
    [],
  );
});

t.test('every import of our files resolves to a file', async (t) => {
  const known = new Set(files);
  t.same(
    edges.filter((e) => /\.m?ts$/.test(e.to) && !known.has(e.to) && !e.to.startsWith('node_modules/')).map((e) => `${e.from} imports ${e.to}`),
    [],
  );
});

t.test('imports follow the rooms, and a planted one against them is found', async (t) => {
  t.same(violations(edges), []);
  const planted: Edge[] = [
    { from: 'engine/infra/redis/client.ts', to: 'engine/state/users/consent.ts', lazy: false },
    { from: 'engine/state/users/consent.ts', to: 'actors/partition/actor.ts', lazy: false },
    { from: 'gateway/server/app.ts', to: 'gateway/routes/table.ts', lazy: false },
    { from: 'actors/fanout/role.ts', to: 'actors/dispatch/role.ts', lazy: true },
  ];
  t.equal(violations([...edges, ...planted]).length, planted.length);
});

t.test("an owner's keys are imported only inside the owner, and a planted import is found", async (t) => {
  const owners = [...new Set(edges.filter((e) => e.to.endsWith('/redis-keys.ts')).map((e) => e.to))];
  t.ok(owners.length >= 5, `owners with their keys: ${owners.join(', ')}`);
  t.same(foreignKeys(edges), []);
  const planted: Edge[] = [
    { from: 'actors/dispatch/dispatch-handler.ts', to: 'engine/state/users/redis-keys.ts', lazy: false },
    { from: 'engine/state/notifications/lifecycle.ts', to: 'engine/state/users/redis-keys.ts', lazy: false },
    { from: 'test/lua/frequency-cap.test.ts', to: 'engine/state/users/redis-keys.ts', lazy: false },
  ];
  t.equal(foreignKeys([...edges, ...planted]).length, 2);
});

t.test('no import circle, and a planted one is found', async (t) => {
  t.equal(findCycle(staticGraph(edges))?.join(' -> ') ?? null, null);
  const planted = staticGraph([...edges, { from: 'engine/infra/process/log.ts', to: 'engine/infra/clickhouse/client.ts', lazy: false }]);
  t.not(findCycle(planted), null);
});

t.test('uWebSockets.js is used inside gateway/server/uws/ only, ws inside gateway/server/node/ only', async (t) => {
  const packages = (file: string): string[] => specifiers(readFileSync(join(root, file), 'utf8')).map((i) => i.spec);
  const product = files.filter((f) => ['engine', 'gateway', 'actors', 'bin'].some((room) => within(f, room)));
  t.same(product.filter((f) => !f.startsWith('gateway/server/uws/') && packages(f).includes('uWebSockets.js')), []);
  t.same(product.filter((f) => !f.startsWith('gateway/server/node/') && packages(f).includes('ws')), []);
});

t.test('each server is loaded only when it serves: nothing imports gateway/server/uws/ or node/ statically from outside', async (t) => {
  const servers = ['gateway/server/uws/', 'gateway/server/node/'];
  t.same(
    edges.filter((e) => !e.lazy && servers.some((dir) => e.to.startsWith(dir) && !e.from.startsWith(dir))).map((e) => `${e.from} imports ${e.to}`),
    [],
  );
  t.match(readFileSync(join(root, 'gateway/server/app.ts'), 'utf8'), /await import\('\.\/uws\/serve\.ts'\)/, 'app.ts imports the uWS server when it is chosen');
});

t.test('eslint refuses an import across a room boundary', async (t) => {
  const eslint = new ESLint({ cwd: root });
  const lint = async (filePath: string, code: string): Promise<string[]> =>
    (await eslint.lintText(code, { filePath: join(root, filePath) })).flatMap((r) => r.messages.map((m) => m.ruleId ?? m.message));
  const code = (spec: string): string => `import { x } from '${spec}';\nexport const y = x;\n`;
  t.same(await lint('engine/infra/redis/planted.ts', code('../../state/users/consent.ts')), ['no-restricted-imports'], 'infra on a state owner');
  t.same(await lint('engine/state/users/planted.ts', code('../../../actors/partition/actor.ts')), ['no-restricted-imports'], 'a state owner on a role');
  t.same(await lint('schemas/planted.ts', code('../engine/infra/process/log.ts')), ['no-restricted-imports'], 'the schemas on the engine');
  t.same(await lint('actors/fanout/planted.ts', code('../../gateway/role.ts')), ['no-restricted-imports'], 'a worker on the gateway');
  t.same(await lint('engine/state/notifications/planted.ts', code('../users/redis-keys.ts')), ['no-restricted-imports'], "an owner on another owner's keys");
  t.same(await lint('actors/dispatch/planted.ts', code('../../engine/state/users/redis-keys.ts')), ['no-restricted-imports'], "a role on an owner's keys");
  t.same(await lint('engine/state/users/planted.ts', code('./redis-keys.ts')), [], 'an owner on its own keys');
  t.same(await lint('engine/state/users/planted.ts', code('../../infra/redis/client.ts')), [], 'a state owner on infra');
});
