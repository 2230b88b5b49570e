import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** An import of one of our top-level folders, at any depth of `../` (docs/architecture.md, layout of the code). */
const folders = (names) => ({ regex: `^(\\.\\./)+(${names.join('|')})/`, message: 'docs/architecture.md (layout of the code) says which folders this one may import.' });

export default tseslint.config(
  { ignores: ['node_modules/**', '.data/**', '.tap/**', 'dist/**', 'test-output/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  {
    files: ['schemas/**', 'engine/**', 'gateway/**', 'actors/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [folders(['simulators', 'bench', 'test'])] }] },
  },
  {
    files: ['simulators/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [folders(['gateway', 'actors', 'bench', 'test'])] }] },
  },
  {
    files: ['bench/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [folders(['test'])] }] },
  },
);
