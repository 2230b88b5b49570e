import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** An import of one of our folders by name, at any depth of `../` (docs/architecture.md, layout of the code). */
const folders = (names) => ({ regex: `^(\\.\\./)+(${names.join('|')})/`, message: 'docs/architecture.md (layout of the code) says which rooms this one may import.' });

/** Another folder's `redis-keys.ts`: an owner's key builders, imported only inside the owner (docs/architecture.md, "Redis keys"). */
const ownersKeys = { regex: '^(\\.\\./)+[^./][^/]*/(.+/)?redis-keys\\.ts$', message: "An owner's keys are its own: call the owner (docs/architecture.md, Redis keys)." };

/** One no-restricted-imports block per room: the folders its files may not import, and no other owner's keys. */
const boundaries = (table) =>
  Object.entries(table).map(([files, names]) => ({ files: [files], rules: { 'no-restricted-imports': ['error', { patterns: [folders(names), ownersKeys] }] } }));

export default tseslint.config(
  { ignores: ['node_modules/**', '.data/**', '.tap/**', 'dist/**', 'sdk/web/dist/**', 'test-output/**', '.cache/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  // The rooms' boundaries by folder name (the top-level scripts/ is left out: engine/infra/scripts/
  // shares its name); test/repo/imports.test.ts checks the whole graph, each room's list, no circle.
  ...boundaries({
    'schemas/**': ['engine', 'gateway', 'actors', 'bin', 'simulators', 'bench', 'test'],
    'engine/infra/**': ['state', 'gateway', 'actors', 'bin', 'simulators', 'bench', 'test'],
    'engine/state/**': ['gateway', 'actors', 'bin', 'simulators', 'bench', 'test'],
    'gateway/**': ['actors', 'bin', 'simulators', 'bench', 'test'],
    'actors/**': ['gateway', 'bin', 'simulators', 'bench', 'test'],
    'bin/**': ['simulators', 'bench', 'test'],
    'simulators/**': ['gateway', 'actors', 'bin', 'bench', 'test'],
    'bench/**': ['test'],
    'scripts/**': ['test'],
    'sdk/**': ['schemas', 'engine', 'gateway', 'actors', 'bin', 'simulators', 'bench', 'scripts', 'test'],
  }),
  // A benchmark reads like the engine: its steps named, none over 80 lines (bench/README.md).
  { files: ['bench/**'], rules: { 'max-lines-per-function': ['error', { max: 80 }] } },
);
