import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, extname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

/**
 * The repository stands alone: no tracked file reads or cites a path outside it, and every
 * citation of a doc (`docs/<file>.md#<anchor>`) and every link between the docs names a file and a
 * heading that exist. Code comments cite the docs, so the docs are the contract they point to.
 */

const root = fileURLToPath(new URL('../..', import.meta.url));
/** Folders that are built, installed or written by runs, never sources. */
const generated = new Set(['node_modules', '.git', 'dist', '.data', 'test-output', '.tap']);
const binary = new Set(['.png', '.jpg', '.jpeg', '.gif', '.ico', '.woff', '.woff2', '.gz', '.zip']);
const code = new Set(['.ts', '.tsx', '.js', '.mjs', '.cjs']);

interface TextFile {
  /** Relative to the repository root, with `/`. */
  path: string;
  text: string;
}

/** In a checkout, the files git tracks or would (not ignored); else every file of the tree but generated folders. */
function trackedPaths(): string[] {
  try {
    const out = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return out.split('\0').filter((p) => p !== '' && existsSync(join(root, p)));
  } catch {
    return walk('');
  }
}

function walk(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = dir === '' ? entry.name : `${dir}/${entry.name}`;
    if (entry.isDirectory()) return generated.has(entry.name) ? [] : walk(path);
    return entry.isFile() ? [path] : [];
  });
}

function textFiles(): TextFile[] {
  return trackedPaths()
    .filter((path) => !binary.has(extname(path).toLowerCase()))
    .map((path) => ({ path, text: readFileSync(join(root, path), 'utf8') }))
    .filter((file) => !file.text.includes('\0'));
}

/** `file:line` of an index into a file's text. */
function at(file: TextFile, index: number): string {
  return `${file.path}:${file.text.slice(0, index).split('\n').length}`;
}

/** Whether an absolute path lies inside the repository. */
function inside(abs: string): boolean {
  const rel = relative(root, abs);
  return !rel.startsWith('..') && !isAbsolute(rel);
}

// The patterns are assembled here so that this file does not match them itself.
const briefNames = ['API', 'DESIGN', 'PROVIDERS', 'STYLE'].map((name) => `${name}\\.md`).join('|');
const briefFile = new RegExp(`(?<!docs/)(?<![\\w.-])(?:${briefNames})`, 'g');
const siblingFolder = new RegExp(`(?:${['\\.\\.', ''].join('/')})+shared\\b|${['', 'work', 'shared'].join('/')}\\b`, 'g');

/** (a) Mentions of the product brief's files, or of a `shared` folder beside the repository. */
function briefMentions(file: TextFile): string[] {
  const found: string[] = [];
  for (const pattern of [briefFile, siblingFolder]) {
    for (const m of file.text.matchAll(pattern)) found.push(`${at(file, m.index)}: cites ${m[0]}, outside the repository`);
  }
  return found;
}

/** String literals of relative paths in code: imports, `new URL(…, import.meta.url)`, file-system and path calls. */
const codePaths = [
  /\b(?:from|import)\s*\(?\s*['"](\.{1,2}(?:\/[^'"]*)?)['"]/g,
  /\brequire\(\s*['"](\.{1,2}(?:\/[^'"]*)?)['"]/g,
  /\bnew URL\(\s*['"]([^'"]*)['"]\s*,\s*import\.meta\.url/g,
];
const pathCall = /\b(?:readFileSync|readFile|readdirSync|readdir|existsSync|statSync|createReadStream|join|resolve)\(([^()]*)\)/g;
const literal = /['"]([^'"]*)['"]/g;

/** The relative paths a file reads or names, each with where it appears (resolved against the file's folder). */
function relativePaths(file: TextFile): { index: number; path: string }[] {
  const ext = extname(file.path);
  const found: { index: number; path: string }[] = [];
  if (code.has(ext)) {
    for (const pattern of codePaths) for (const m of file.text.matchAll(pattern)) found.push({ index: m.index, path: m[1] ?? '' });
    for (const m of file.text.matchAll(pathCall)) {
      // Consecutive literal arguments make one path: join(here, '..', '..', 'x').
      const parts = [...(m[1] ?? '').matchAll(literal)].map((l) => l[1] ?? '');
      if (parts.length > 0 && (parts[0] === '.' || parts[0] === '..' || /^\.{1,2}\//.test(parts[0] ?? ''))) found.push({ index: m.index, path: parts.join('/') });
    }
  } else if (ext === '.json') {
    for (const m of file.text.matchAll(/"(\.{1,2}\/[^"]*)"/g)) found.push({ index: m.index, path: m[1] ?? '' });
  } else if (ext === '.sh' || ext === '' || file.path === 'Makefile') {
    for (const m of file.text.matchAll(/\$\(dirname "\$0"\)\/([^"\s)]*)/g)) found.push({ index: m.index, path: m[1] ?? '' });
  }
  return found;
}

/** (b) Relative paths in code that resolve outside the repository. */
function pathsOutside(file: TextFile): string[] {
  const dir = join(root, dirname(file.path));
  return relativePaths(file)
    .filter(({ path }) => !inside(resolve(dir, path)))
    .map(({ index, path }) => `${at(file, index)}: ${path} resolves outside the repository`);
}

/** The lines of a markdown text outside fenced code blocks (the others are blanked, so indexes hold). */
function outsideFences(text: string): string {
  let fence: string | null = null;
  return text
    .split('\n')
    .map((line) => {
      const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
      if (marker && (fence === null || marker.startsWith(fence))) {
        fence = fence === null ? marker : null;
        return ' '.repeat(line.length);
      }
      return fence === null ? line : ' '.repeat(line.length);
    })
    .join('\n');
}

/** A heading's anchor as GitHub makes it: lowercase, punctuation but `-` and `_` dropped, spaces to `-`. */
function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor of a markdown text: its headings (a repeated one gets `-1`, `-2`, …) and `id`/`name` attributes. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of outsideFences(markdown).split('\n')) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of markdown.matchAll(/<a\s[^>]*\b(?:id|name)="([^"]+)"/g)) if (m[1]) anchors.add(m[1]);
  return anchors;
}

const anchorCache = new Map<string, Set<string> | null>();

/** The anchors of a file of the repository, or null when it does not exist. */
function anchorsOfFile(abs: string): Set<string> | null {
  let anchors = anchorCache.get(abs);
  if (anchors === undefined) {
    anchors = existsSync(abs) ? anchorsOf(readFileSync(abs, 'utf8')) : null;
    anchorCache.set(abs, anchors);
  }
  return anchors;
}

/** What is wrong with a reference to `target` (a path and an optional anchor), or null when it holds. */
function brokenTarget(abs: string, anchor: string | undefined): string | null {
  if (!inside(abs)) return 'is outside the repository';
  if (!existsSync(abs)) return 'names a file that does not exist';
  if (anchor === undefined || anchor === '' || extname(abs) !== '.md') return null;
  return anchorsOfFile(abs)?.has(decodeURIComponent(anchor)) ? null : `names no heading of ${relative(root, abs)}`;
}

const citation = /(?<![\w./-])docs\/([\w.-]+\.md)(?:#([\p{L}\p{N}_-]+))?/gu;

/** (c) Citations `docs/<file>.md#<anchor>` whose file or heading does not exist. */
function brokenCitations(file: TextFile): string[] {
  const found: string[] = [];
  for (const m of file.text.matchAll(citation)) {
    const problem = brokenTarget(join(root, 'docs', m[1] ?? ''), m[2]);
    if (problem) found.push(`${at(file, m.index)}: ${m[0]} ${problem}`);
  }
  return found;
}

/** (c) Relative links of a markdown file to files or headings that do not exist, or outside the repository. */
function brokenLinks(file: TextFile): string[] {
  if (extname(file.path) !== '.md') return [];
  // Code spans hold examples, not links; blanked so that indexes stay.
  const text = outsideFences(file.text).replace(/`[^`\n]*`/g, (span) => ' '.repeat(span.length));
  const found: string[] = [];
  for (const m of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    const target = m[1] ?? '';
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    const [path = '', anchor] = target.split('#');
    const abs = path === '' ? join(root, file.path) : resolve(join(root, dirname(file.path)), decodeURIComponent(path));
    const problem = brokenTarget(abs, anchor);
    if (problem) found.push(`${at(file, m.index)}: link ${target} ${problem}`);
  }
  return found;
}

const files = textFiles();

t.test('the files checked are the tracked ones', async (t) => {
  const paths = new Set(files.map((f) => f.path));
  for (const path of ['README.md', 'docs/api.md', 'docs/providers.md', 'package.json', 'test/repo/stands-alone.test.ts']) t.ok(paths.has(path), `${path} is checked`);
  t.notOk([...paths].some((p) => p.split('/').some((part) => part === 'node_modules')), 'no installed package is checked');
  const cited = files.reduce((n, f) => n + [...f.text.matchAll(citation)].length, 0);
  t.ok(cited >= 100, `${cited} citations of the docs are checked`);
  const imports = files.reduce((n, f) => n + relativePaths(f).length, 0);
  t.ok(imports >= 500, `${imports} relative paths in code are checked`);
});

t.test('no tracked file cites the product brief or a folder beside the repository', async (t) => {
  t.strictSame(files.flatMap(briefMentions), []);
});

t.test('no relative path in code resolves outside the repository', async (t) => {
  t.strictSame(files.flatMap(pathsOutside), []);
});

t.test('every citation of a doc names a file and a heading that exist', async (t) => {
  t.strictSame(files.flatMap(brokenCitations), []);
});

t.test('every relative link of the docs and READMEs names a file and a heading that exist', async (t) => {
  t.strictSame(files.flatMap(brokenLinks), []);
});

t.test('each check finds what it looks for', async (t) => {
  const planted = (path: string, text: string): TextFile => ({ path, text });
  const brief = ['API', 'md'].join('.');
  t.equal(briefMentions(planted('engine/x.ts', `// see ${brief} section 4`)).length, 1, 'a brief file name');
  t.equal(briefMentions(planted('engine/x.ts', `// see docs/${brief.toLowerCase()}#errors`)).length, 0, 'the docs are not the brief');
  t.equal(briefMentions(planted('test/x.ts', `readFileSync(new URL('${['..', '..', 'shared', 'notes.txt'].join('/')}', import.meta.url))`)).length, 1, 'a sibling folder');
  const up = (n: number): string => Array.from({ length: n }, () => '..').join('/');
  t.equal(pathsOutside(planted('test/x.ts', `import { a } from '${up(3)}/elsewhere/a.ts';`)).length, 1, 'an import out of the repository');
  t.equal(pathsOutside(planted('test/x.ts', `const f = new URL('${up(2)}/x', import.meta.url);`)).length, 1, 'a URL out of the repository');
  const segments = ["'..'", "'..'", "'..'", "'x'"].join(', ');
  t.equal(pathsOutside(planted('test/x.ts', `readFileSync(join(here, ${segments}))`)).length, 1, 'joined segments out of the repository');
  t.equal(pathsOutside(planted('test/x.ts', `import { a } from '${up(1)}/schemas/errors.ts';`)).length, 0, 'an import inside the repository');
  t.equal(pathsOutside(planted('scripts/x.sh', `cd "$(dirname "$0")/${up(2)}"`)).length, 1, 'a script leaving the repository');
  const docs = (target: string): string => ['docs', target].join('/');
  t.equal(brokenCitations(planted('engine/x.ts', `// ${docs('api.md#no-such-heading')}`)).length, 1, 'a missing anchor');
  t.equal(brokenCitations(planted('engine/x.ts', `// ${docs('no-such-file.md')}`)).length, 1, 'a missing doc');
  t.equal(brokenCitations(planted('engine/x.ts', '// docs/api.md#errors and docs/providers.md#apns')).length, 0, 'anchors that exist');
  t.equal(brokenLinks(planted(docs('scaling.md'), '[a](api.md#limits) [b](#nowhere) [c](missing.md) [d](https://example.com)')).length, 2, 'markdown links');
  t.equal(brokenLinks(planted(docs('scaling.md'), '```\n[a](missing.md)\n```\n`[b](missing.md)`')).length, 0, 'links in code are examples');
  t.equal(slug('Rate limits: 429 and Retry-After'), 'rate-limits-429-and-retry-after');
  t.equal(slug('The `engine` command'), 'the-engine-command');
  t.strictSame([...anchorsOf('# A\n## B\n```\n# not a heading\n```\n## B\n')], ['a', 'b', 'b-1']);
});
