// The README and the manuals in docs/ stay true to the repository (issue #17 item 17): every
// `retrokube …` command they show names real verbs and real flags of the CLI, every `npm run`
// a real script, every `npx vitest run` a real project and real files, every repository path and
// every relative link an existing file; the README's map names every folder, and links every manual.
import { existsSync, globSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import type { Command, Option } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../operator/src/cli/program.ts';

const ROOT = join(import.meta.dirname, '../..');
const MANUALS = readdirSync(join(ROOT, 'docs'))
  .filter((f) => f.endsWith('.md'))
  .sort()
  .map((f) => `docs/${f}`);
// The READMEs of folders are manuals too, for what sits in that folder.
const FOLDER_READMES = ['images/virt-launcher/README.md', 'marketplace/README.md', 'test/envtest/README.md'];
const DOCS = ['README.md', ...MANUALS, ...FOLDER_READMES];
const TOP = new Set([
  '.ci',
  'bench',
  'charts',
  'crds',
  'docs',
  'hack',
  'images',
  'marketplace',
  'operator',
  'qemu',
  'test',
]);
const TOP_FILES = new Set([
  'Dockerfile',
  'LICENSE',
  'package.json',
  'vitest.config.ts',
  'biome.json',
  '.dockerignore',
]);

/** A piece of code the text shows, with where it is. */
interface Snippet {
  file: string;
  line: number;
  text: string;
}

/** Fenced blocks line by line, and inline `code` (which may wrap across lines in prose). */
function snippets(file: string): Snippet[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const out: Snippet[] = [];
  const lines = text.split('\n');
  const prose: string[] = [];
  let fenced = false;
  lines.forEach((l, i) => {
    if (/^\s*```/.test(l)) {
      fenced = !fenced;
      prose.push('');
      return;
    }
    if (fenced) {
      out.push({ file, line: i + 1, text: l });
      prose.push('');
    } else prose.push(l);
  });
  const body = prose.join('\n');
  for (const m of body.matchAll(/`([^`]+)`/g)) {
    const line = body.slice(0, m.index).split('\n').length;
    out.push({ file, line, text: (m[1] as string).replace(/\n/g, ' ') });
  }
  return out;
}

const ALL = DOCS.flatMap(snippets);
const where = (s: Snippet): string => `${s.file}:${s.line}`;

// --- the CLI tree --------------------------------------------------------------------------------

// The whole tree, every verb's module loaded (the CLI itself loads only the verb it runs).
const FULL_TREE = await buildProgram();
const cliTree = (): Command => FULL_TREE;

const findOption = (chain: Command[], flag: string): Option | undefined =>
  chain
    .flatMap((c) => c.options)
    .find((o) => o.long === flag || o.short === flag || (o.negate && o.long === flag));

/** What is wrong with one `retrokube …` command line, judged against the real command tree. */
function checkCommand(program: Command, words: string[]): string | undefined {
  const chain: Command[] = [program];
  let cmd = program;
  let positional = false;
  for (let i = 0; i < words.length; i++) {
    const w = (words[i] as string).replace(/^\[+|[\],]+$/g, '');
    if (!w || w === '…' || w === '...') continue;
    if (w.startsWith('-')) {
      const flag = w.split('=')[0] as string;
      if (flag === '-' || flag === '--' || flag === '--help' || flag === '-h') continue;
      const o = findOption(chain, flag);
      if (!o) return `${chain.map((c) => c.name()).join(' ')} has no option ${flag}`;
      if ((o.required || o.optional) && !w.includes('=')) i++;
      continue;
    }
    if (positional) continue;
    const alternatives = w.split('|');
    const subs = alternatives.map((a) => cmd.commands.find((c) => c.name() === a || c.aliases().includes(a)));
    if (subs.every((s) => s)) {
      cmd = subs[0] as Command;
      chain.push(cmd);
      continue;
    }
    if (cmd.commands.length > 0 && cmd.registeredArguments.length === 0 && /^[a-z][\w-]*$/.test(w))
      return `${chain.map((c) => c.name()).join(' ')} has no verb ${w}`;
    positional = true;
  }
  if (cmd === program && !words.some((w) => /^(--help|-h|--version|-V)$/.test(w))) return 'no verb';
  return undefined;
}

/** `retrokube …` (or the checkout's `./retrokube …`) commands of a snippet: each from `retrokube` to a comment, pipe, `;` or `&&`. */
function commandsIn(text: string): string[][] {
  const out: string[][] = [];
  for (const m of text.matchAll(
    /(?:^|[;|&(]\s*|\$\(\s*|\b[A-Z_]+=\S*\s+)(?:\.\/)?retrokube\s+([^#;|&)]*)/g,
  )) {
    out.push((m[1] as string).trim().split(/\s+/).filter(Boolean));
  }
  return out;
}

// --- paths ---------------------------------------------------------------------------------------

const expandBraces = (p: string): string[] => {
  const m = /\{([^{}]*)\}/.exec(p);
  if (!m) return [p];
  return (m[1] as string)
    .split(',')
    .flatMap((alt) => expandBraces(p.slice(0, m.index) + alt + p.slice(m.index + m[0].length)));
};

/** Repository paths in a snippet: words that start at a top-level folder or name a top-level file. */
function pathsIn(text: string): string[] {
  const out: string[] = [];
  for (const raw of text.split(/[\s"'=();]+/)) {
    const w = raw.replace(/[.:,;)\]]+$/, '').replace(/:\d+(:\d+)?$/, '');
    if (w.includes(',') && !/\{[^}]*,/.test(w)) continue; // a list such as plane,node-a
    if (!w || /[<>$~]|\.\.\./.test(w) || /^[A-Z_]+$/.test(w)) continue;
    const head = w.split('/')[0] as string;
    if ((TOP.has(head) && w.includes('/')) || TOP_FILES.has(w)) out.push(...expandBraces(w));
  }
  return out;
}

const exists = (p: string): boolean =>
  p.includes('*') ? globSync(p, { cwd: ROOT }).length > 0 : existsSync(join(ROOT, p));

describe('the README and docs/ stay true', () => {
  const program = cliTree();

  it('every `retrokube …` command names real verbs and flags', () => {
    const found: string[] = [];
    const wrong: string[] = [];
    for (const s of ALL)
      for (const words of commandsIn(s.text)) {
        found.push(words.join(' '));
        const problem = checkCommand(program, words);
        if (problem) wrong.push(`${where(s)}: retrokube ${words.join(' ')} — ${problem}`);
      }
    expect(found.length).toBeGreaterThan(40);
    expect(wrong).toEqual([]);
  });

  it('every `npm run`, `npx vitest run --project` and test file they name exists', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    const projects = [
      ...readFileSync(join(ROOT, 'vitest.config.ts'), 'utf8').matchAll(/name: '([\w-]+)'/g),
    ].map((m) => m[1]);
    const wrong: string[] = [];
    let seen = 0;
    for (const s of ALL) {
      for (const m of s.text.matchAll(/\bnpm run ([\w:-]+)/g)) {
        seen++;
        if (!pkg.scripts[m[1] as string]) wrong.push(`${where(s)}: npm run ${m[1]} — no such script`);
      }
      for (const m of s.text.matchAll(/--project[ =]([\w-]+)/g)) {
        seen++;
        if (!projects.includes(m[1])) wrong.push(`${where(s)}: vitest project ${m[1]} does not exist`);
      }
    }
    expect(seen).toBeGreaterThan(10);
    expect(wrong).toEqual([]);
  });

  it('every repository path they name exists', () => {
    const wrong: string[] = [];
    let seen = 0;
    for (const s of ALL)
      for (const p of pathsIn(s.text)) {
        seen++;
        if (!exists(p)) wrong.push(`${where(s)}: ${p} does not exist`);
      }
    expect(seen).toBeGreaterThan(100);
    expect(wrong).toEqual([]);
  });

  it('every command runs as written: no TypeScript file handed to a bare `node` (the system Node may be older than 24)', () => {
    // #31 item 11: `node hack/setup.ts --list` failed on the system Node 20 (".ts unknown
    // extension"); the docs run .ts files through npm scripts, ./retrokube or node_modules/.bin/node.
    const wrong: string[] = [];
    for (const s of ALL)
      for (const m of s.text.matchAll(/(^|[^\w./-])node ([\w./-]+\.ts)\b/g))
        wrong.push(`${where(s)}: node ${m[2]} — use an npm script or node_modules/.bin/node`);
    expect(wrong).toEqual([]);
  });

  it('every relative link points at a file', () => {
    const wrong: string[] = [];
    for (const file of DOCS) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = (m[1] as string).split('#')[0] as string;
        if (!target || /^[a-z]+:/.test(target)) continue;
        if (!existsSync(join(ROOT, normalize(join(dirname(file), target)))))
          wrong.push(`${file}: link ${m[1]} points at nothing`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it("the README's map names every folder of the repository and of operator/src, and links every manual", () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const map = /## Map of the repository\n([\s\S]*?)\n## /.exec(readme)?.[1] ?? '';
    expect(map, 'README.md has a "## Map of the repository" section').not.toBe('');
    const folders = [
      ...[...TOP].filter((d) => d !== '.ci').map((d) => `${d}/`),
      ...readdirSync(join(ROOT, 'operator/src'), { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => `${d.name}/`),
    ];
    expect(
      folders.filter((f) => !map.includes(f)),
      "folders missing from the README's map",
    ).toEqual([]);
    expect(
      MANUALS.filter((m) => !readme.includes(`](${m})`)),
      "manuals without a row in the README's Manuals table",
    ).toEqual([]);
  });
});

describe('the checks themselves', () => {
  const program = cliTree();
  it('refuse a verb or flag the CLI does not have, and accept real ones', () => {
    const check = (line: string) => checkCommand(program, commandsIn(line)[0] as string[]);
    expect(check('retrokube air loss 0.3 --control http://127.0.0.1:1')).toBeUndefined();
    expect(check('retrokube skctl -s http://x --token t get pods')).toBeUndefined();
    expect(check('retrokube sheets bridge status|sync --local a')).toBeUndefined();
    expect(check('retrokube air lose 0.3')).toMatch(/air has no verb lose/);
    expect(check('retrokube disk ls my.dsk --color')).toMatch(/no option --color/);
    expect(check('retrokube frobnicate')).toMatch(/has no verb frobnicate/);
    expect(check('retrokube --version')).toBeUndefined();
    expect(check('./retrokube machine of node-a')).toMatch(/has no verb of/);
    expect(commandsIn('helm install retrokube charts/retrokube')).toEqual([]);
    expect(
      commandsIn('TOKEN=s retrokube sheets serve --port 1 # comment; x').map((w) => w.join(' ')),
    ).toEqual(['sheets serve --port 1']);
  });
  it('find repository paths, braces and globs included', () => {
    expect(pathsIn('see operator/src/sheets/node/{cli,agent}.test.ts, and test/e2e/kube-*.test.ts.')).toEqual(
      [
        'operator/src/sheets/node/cli.test.ts',
        'operator/src/sheets/node/agent.test.ts',
        'test/e2e/kube-*.test.ts',
      ],
    );
    expect(exists('test/e2e/kube-*.test.ts')).toBe(true);
    expect(exists('operator/src/nothing-here.ts')).toBe(false);
  });
});
