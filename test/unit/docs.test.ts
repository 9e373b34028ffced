import * as fs from 'fs';
import * as path from 'path';
import { buildCli } from '../../src/config';

/**
 * The documentation stays true to the tree: the README short, every relative link and anchor
 * resolving, every path ARCHITECTURE.md names existing, and the flag table of
 * docs/configuration.md the one `--help` prints.
 */
const REPO = path.resolve(__dirname, '..', '..');
const read = (rel: string): string => fs.readFileSync(path.join(REPO, rel), 'utf8');

/** Build output and dependencies: never documentation, never what ARCHITECTURE.md maps. */
const SKIP_DIRS = new Set(['.git', 'node_modules', 'dist', 'dist-pkg', 'coverage']);

/** Every file and directory of the checkout, relative, directories with a trailing slash. */
function tree(dir = REPO, out: string[] = []): string[] {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (SKIP_DIRS.has(e.name)) continue;
    const rel = path.relative(REPO, path.join(dir, e.name));
    if (e.isDirectory()) {
      out.push(`${rel}/`);
      tree(path.join(dir, e.name), out);
    } else out.push(rel);
  }
  return out;
}

/** The markdown files people read: the top-level ones, docs/, and the packaging READMEs. */
function markdownFiles(files: readonly string[]): string[] {
  return files.filter(
    (f) => f.endsWith('.md') && (!f.includes('/') || f.startsWith('docs/') || f.startsWith('packaging/')),
  );
}

/** `[text](target)` links, outside code blocks and code spans. */
function links(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)].map((m) => m[1]);
}

/** The anchors GitHub makes of a file's headings. */
function anchors(markdown: string): Set<string> {
  const headings = markdown.replace(/```[\s\S]*?```/g, '').match(/^#{1,6} .*$/gm) ?? [];
  return new Set(
    headings.map((h) =>
      h
        .replace(/^#+ /, '')
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, '')
        .replace(/ /g, '-'),
    ),
  );
}

/** What is wrong with each relative link of `file`: a missing target, or a missing heading anchor. */
function brokenLinks(file: string, markdown: string, readRel: (rel: string) => string | undefined): string[] {
  const broken: string[] = [];
  for (const link of links(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // https:, mailto:
    const [target, anchor] = link.split('#', 2);
    const rel = target ? path.normalize(path.join(path.dirname(file), target)) : file;
    const text = readRel(rel);
    if (text === undefined) broken.push(`${file}: ${link} (no ${rel})`);
    else if (anchor && rel.endsWith('.md') && !anchors(text).has(anchor))
      broken.push(`${file}: ${link} (no heading #${anchor} in ${rel})`);
  }
  return broken;
}

/** A file's text, '' for a directory, undefined when there is nothing at `rel`. */
function readRel(rel: string): string | undefined {
  const abs = path.join(REPO, rel);
  if (!fs.existsSync(abs)) return undefined;
  return fs.statSync(abs).isDirectory() ? '' : fs.readFileSync(abs, 'utf8');
}

const SOURCE_EXT = /\.(ts|js|mjs|cjs|json|sh|md|proto|conflist|c)$/;

/**
 * The paths a piece of markdown names in backticks: a token with a `/` (not absolute, not a
 * package such as `@grpc/grpc-js`) or a source file name. Flags, labels, globs, env and code are not paths.
 */
function backtickPaths(markdown: string, dependencies: ReadonlySet<string>): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, '');
  const tokens = [...prose.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]);
  return tokens.filter(
    (t) =>
      /^[\w.-]+(\/[\w.-]*)*$/.test(t) &&
      !t.startsWith('.') &&
      !dependencies.has(t) &&
      (t.includes('/') || SOURCE_EXT.test(t)),
  );
}

/** The repository paths inside a markdown file's code blocks (ARCHITECTURE.md's layout). */
function layoutPaths(markdown: string, topLevel: readonly string[]): string[] {
  const blocks = (markdown.match(/```[\s\S]*?```/g) ?? []).join('\n');
  const dirs = topLevel.map((d) => d.replace(/\/$/, '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|');
  return [...blocks.matchAll(new RegExp(`(?<![\\w/.-])((?:${dirs})/[\\w./-]*)`, 'g'))].map((m) =>
    m[1].replace(/[.,]$/, ''),
  );
}

/**
 * Whether `p` names something in `files`: exactly, from the root, when it starts at a top-level
 * directory; otherwise as the tail of some path (`state/mutations.ts` in src/, `checks/` in src/doctor/).
 */
function pathExists(p: string, files: readonly string[], topLevel: readonly string[]): boolean {
  const forms = p.endsWith('/') ? [p] : [p, `${p}/`];
  if (topLevel.some((d) => p.startsWith(d))) return files.some((f) => forms.includes(f));
  return files.some((f) => forms.some((w) => f === w || f.endsWith(`/${w}`)));
}

/** Build output named in the docs (`dist/`): there only after a build. */
function ignored(p: string): boolean {
  const patterns = read('.gitignore')
    .split('\n')
    .map((l) => l.trim().replace(/^\//, ''))
    .filter((l) => l.endsWith('/'));
  return patterns.some((d) => p === d.slice(0, -1) || p.startsWith(d));
}

/** The first markdown table after `heading`, as rows of cells (header and separator dropped). */
function tableAfter(markdown: string, heading: string): string[][] {
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => l.trim() === heading);
  if (start < 0) return [];
  const first = lines.findIndex((l, i) => i > start && l.startsWith('|'));
  if (first < 0) return [];
  const rows: string[][] = [];
  for (let i = first + 2; i < lines.length && lines[i].startsWith('|'); i++)
    rows.push(
      lines[i]
        .replace(/^\||\|$/g, '')
        .split(/(?<!\\)\|/)
        .map((c) => c.trim()),
    );
  return rows;
}

/** A table cell as plain text: code spans unwrapped. */
const plain = (cell: string): string => cell.replace(/`/g, '').trim();

/** Each flag as `--help` shows it: its term (`--cni-bin-dir <dirs>`) and default (`-` when none), by long name. */
function helpFlags(): Map<string, { term: string; default: string }> {
  const cli = buildCli();
  const help = cli.createHelp();
  const flags = new Map<string, { term: string; default: string }>();
  for (const o of help.visibleOptions(cli)) {
    const shown = /default: (.*)\)$/.exec(help.optionDescription(o))?.[1];
    const value = shown === undefined ? '-' : shown.startsWith('"') ? (JSON.parse(shown) as string) : shown;
    flags.set(o.long ?? o.flags, { term: help.optionTerm(o), default: value });
  }
  return flags;
}

/** The flag table of docs/configuration.md, by long name. */
function documentedFlags(markdown: string): Map<string, { term: string; default: string }> {
  const flags = new Map<string, { term: string; default: string }>();
  for (const [flag, def] of tableAfter(markdown, '## Flags')) {
    const long = /--[a-z][a-z0-9-]*/.exec(flag)?.[0] ?? flag;
    flags.set(long, { term: plain(flag), default: plain(def ?? '') });
  }
  return flags;
}

describe('the documentation', () => {
  const files = tree();
  const topLevel = files.filter((f) => f.endsWith('/') && f.indexOf('/') === f.length - 1);
  const pkg = JSON.parse(read('package.json')) as {
    dependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
  };
  const dependencies = new Set([...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.devDependencies ?? {})]);

  it('keeps the README to 300 lines', () => {
    expect(read('README.md').split('\n').length).toBeLessThanOrEqual(300);
  });

  it('links from the README to every file in docs/', () => {
    const linked = new Set(links(read('README.md')).map((l) => path.normalize(l.split('#')[0])));
    const docs = files.filter((f) => f.startsWith('docs/') && f.endsWith('.md'));
    expect(docs.length).toBeGreaterThan(0);
    expect(docs.filter((d) => !linked.has(d))).toEqual([]);
  });

  it('links only to files and headings that exist', () => {
    const md = markdownFiles(files);
    expect(md).toEqual(expect.arrayContaining(['README.md', 'ARCHITECTURE.md', 'CONTRIBUTING.md']));
    expect(md.flatMap((f) => brokenLinks(f, read(f), readRel))).toEqual([]);
  });

  it('names in ARCHITECTURE.md only paths that exist, in its prose and its layout', () => {
    const text = read('ARCHITECTURE.md');
    const named = [...backtickPaths(text, dependencies), ...layoutPaths(text, topLevel)];
    expect(named.length).toBeGreaterThan(20);
    expect(named.filter((p) => !ignored(p) && !pathExists(p, files, topLevel))).toEqual([]);
  });

  it('documents every flag --help prints, with the same default, and no other', () => {
    const help = helpFlags();
    expect(help.size).toBeGreaterThan(10);
    // compared as the table's first two columns, in --help's order, so a failure shows the rows to write
    const row = (f: { term: string; default: string }): string =>
      `| \`${f.term}\` | ${f.default === '-' ? '-' : `\`${f.default}\``} |`;
    const documented = [...documentedFlags(read('docs/configuration.md')).values()].map(row);
    expect(documented).toEqual([...help.values()].map(row));
  });
});
