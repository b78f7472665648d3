// The figures of README.md and docs/*.md, generated from bench/results/*.json (issue #30, "make
// drift impossible"). A measured figure in a doc is written as a marker whose text this module
// computes from a results file; `npm run docs:figures` rewrites the text of every marker, and
// test/unit/doc-figures.test.ts fails when a doc's text differs from what the results give, when
// a figure's paragraph or table row does not say when and where it was measured, and when a
// measured-looking figure stands outside a marker. The convention (docs/testing.md, "Figures"):
//
//   <!--fig FILE PATH [OP...]-->TEXT<!--/fig-->   a value of bench/results/FILE at PATH
//   <!--src FILE-->TEXT<!--/src-->                 FILE, its date, host CPU model and load
//
// PATH is dotted: `rows[nodes=20].joinS`, `runs[0]`, `runs[*].upS` (one value per element). OPs, applied in order:
// `/N` and `*N` scale; `min`, `max`, `median` reduce an array; `range` prints an array as
// "lo–hi" (one value if equal); `dN` rounds to N decimals (default 0); `,` groups thousands.
//
//   npm run docs:figures            # rewrite every marker from bench/results/
//   npm run docs:figures -- --check # exit 1 and list what differs (what the test does)
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { REPO, SAVED_DIR } from './results.ts';

/** The docs that hold figures: the README and every manual. */
export function figureDocs(root = REPO): string[] {
  const manuals = readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...manuals];
}

export const FIG = /<!--fig ([^\s>]+) ([^\s>]+)((?: [^\s>]+)*)-->([\s\S]*?)<!--\/fig-->/g;
export const SRC = /<!--src ([^\s>]+)-->([\s\S]*?)<!--\/src-->/g;

export type Results = (file: string) => unknown;

/** Reads bench/results/FILE (cached), with an error that says what to do when it is missing. */
export function resultsReader(dir = SAVED_DIR): Results {
  const cache = new Map<string, unknown>();
  return (file) => {
    if (!cache.has(file)) {
      let text: string;
      try {
        text = readFileSync(join(dir, file), 'utf8');
      } catch {
        throw new Error(
          `no results file bench/results/${file}: run its benchmark with --save, or fix the marker`,
        );
      }
      cache.set(file, JSON.parse(text));
    }
    return cache.get(file);
  };
}

/** The value at a dotted PATH (`a.b[2].c`, `rows[nodes=20].joinS`; `runs[*].upS` maps over an array). */
export function lookup(json: unknown, path: string, where = path): unknown {
  const segs = path.split('.');
  let cur: unknown = json;
  for (let i = 0; i < segs.length; i++) {
    const seg = segs[i];
    const m = /^([^[\]]*)((?:\[[^\]]+\])*)$/.exec(seg);
    if (!m) throw new Error(`${where}: bad path segment "${seg}"`);
    if (m[1]) cur = (cur as Record<string, unknown> | null)?.[m[1]];
    for (const [, sel] of m[2].matchAll(/\[([^\]]+)\]/g)) {
      if (!Array.isArray(cur))
        throw new Error(`${where}: "${seg}" selects in something that is not an array`);
      if (sel === '*') {
        const rest = segs.slice(i + 1).join('.');
        return rest ? cur.map((x) => lookup(x, rest, where)) : cur;
      }
      const eq = sel.indexOf('=');
      cur =
        eq < 0
          ? cur[Number(sel)]
          : cur.find((x) => String((x as Record<string, unknown>)?.[sel.slice(0, eq)]) === sel.slice(eq + 1));
    }
    if (cur === undefined) throw new Error(`${where}: nothing at "${seg}"`);
  }
  return cur;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** Formats a value by the marker's OPs. */
export function format(value: unknown, ops: string[], where: string): string {
  let v: unknown = value;
  let decimals = 0;
  let group = false;
  let range = false;
  const nums = (): number[] => {
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'number'))
      throw new Error(`${where}: expected an array of numbers`);
    return v as number[];
  };
  for (const op of ops) {
    const n = Number(op.slice(1));
    if (op[0] === '/' && Number.isFinite(n) && n !== 0)
      v = Array.isArray(v) ? nums().map((x) => x / n) : (v as number) / n;
    else if (op[0] === '*' && Number.isFinite(n))
      v = Array.isArray(v) ? nums().map((x) => x * n) : (v as number) * n;
    else if (op === 'min') v = Math.min(...nums());
    else if (op === 'max') v = Math.max(...nums());
    else if (op === 'median') v = median(nums());
    else if (op === 'range') range = true;
    else if (/^d\d$/.test(op)) decimals = Number(op.slice(1));
    else if (op === ',') group = true;
    else throw new Error(`${where}: unknown op "${op}" (use /N *N min max median range dN ,)`);
  }
  const one = (x: unknown): string => {
    if (typeof x !== 'number' || !Number.isFinite(x))
      throw new Error(`${where}: not a number: ${JSON.stringify(x)}`);
    // a figure that rounds to zero is 0, never "-0" (a difference of two clocks can dip below it)
    const s = x.toFixed(decimals).replace(/^-(0(\.0+)?)$/, '$1');
    if (!group) return s;
    const [int, frac] = s.split('.');
    return `${int.replace(/\B(?=(\d{3})+(?!\d))/g, ',')}${frac ? `.${frac}` : ''}`;
  };
  if (range) {
    const xs = nums().map(one);
    const lo = one(Math.min(...nums()));
    const hi = one(Math.max(...nums()));
    return xs.length === 0 ? '' : lo === hi ? lo : `${lo}–${hi}`;
  }
  if (Array.isArray(v)) throw new Error(`${where}: an array; reduce it with min, max, median or range`);
  return one(v);
}

/** When and where: date, CPU model, load, from `recorded` (bench/results.ts). */
export interface Provenance {
  date: string;
  cpuModel: string;
  load: string;
}

export function provenance(json: unknown, file: string): Provenance {
  const rec = (json as { recorded?: Record<string, unknown> })?.recorded;
  if (!rec)
    throw new Error(
      `bench/results/${file} has no "recorded" (date, CPU model, load): re-run its benchmark with --save`,
    );
  const load = rec.loadAverage1m as { start: number; end: number } | undefined;
  if (typeof rec.date !== 'string' || typeof rec.cpuModel !== 'string' || !load)
    throw new Error(`bench/results/${file}: "recorded" lacks date, cpuModel or loadAverage1m`);
  const l = (x: number) => x.toFixed(1);
  // Files from before bench/results.ts carry what their run recorded; a missing run date is the
  // commit date (`dateIs` says so) and a missing CPU model is said to be missing.
  const committed = typeof rec.dateIs === 'string' && rec.dateIs !== 'the run';
  return {
    date: `${rec.date.slice(0, 10)}${committed ? ' (committed; run date not recorded)' : ''}`,
    cpuModel: rec.cpuModel === 'not recorded' ? 'CPU model not recorded' : rec.cpuModel,
    load: l(load.start) === l(load.end) ? l(load.start) : `${l(load.start)}–${l(load.end)}`,
  };
}

export function renderSrc(file: string, results: Results): string {
  const p = provenance(results(file), file);
  return `\`${file}\`, ${p.date}, ${p.cpuModel}, load ${p.load}`;
}

export function renderFig(file: string, path: string, ops: string, results: Results): string {
  const where = `<!--fig ${file} ${path}${ops}-->`;
  return format(lookup(results(file), path, where), ops.split(' ').filter(Boolean), where);
}

/** The text split into prose and fenced code blocks (markers in code are examples, never figures). */
function segments(text: string): { code: boolean; text: string }[] {
  return text
    .split(/(^\s*```[^\n]*\n[\s\S]*?^\s*```[^\n]*$)/m)
    .map((t, i) => ({ code: i % 2 === 1, text: t }));
}

/** The prose of a doc, fenced code blocks left out. */
export function prose(text: string): string {
  return segments(text)
    .filter((s) => !s.code)
    .map((s) => s.text)
    .join('\n');
}

/** The doc with every marker's text regenerated. */
export function regenerate(text: string, results: Results): string {
  return segments(text)
    .map((seg) =>
      seg.code
        ? seg.text
        : seg.text
            .replace(FIG, (_m, file: string, path: string, ops: string) => {
              return `<!--fig ${file} ${path}${ops}-->${renderFig(file, path, ops, results)}<!--/fig-->`;
            })
            .replace(SRC, (_m, file: string) => `<!--src ${file}-->${renderSrc(file, results)}<!--/src-->`),
    )
    .join('');
}

/** A paragraph or table row: what one `src` marker covers. */
interface Block {
  line: number;
  text: string;
}

/** Paragraphs (blank-line separated), list items and table rows; fenced code is left out. */
export function blocks(text: string): Block[] {
  const out: Block[] = [];
  let cur: Block | null = null;
  let fenced = false;
  text.split('\n').forEach((l, i) => {
    if (/^\s*```/.test(l)) fenced = !fenced;
    if (fenced || /^\s*```/.test(l) || l.trim() === '' || /^\s*\|/.test(l)) {
      if (cur) out.push(cur);
      cur = null;
      if (!fenced && /^\s*\|/.test(l)) out.push({ line: i + 1, text: l });
      return;
    }
    if (cur && /^\s*(?:[-*]|\d+\.) /.test(l)) {
      out.push(cur);
      cur = null;
    }
    if (cur) cur.text += `\n${l}`;
    else cur = { line: i + 1, text: l };
  });
  if (cur) out.push(cur);
  return out;
}

/**
 * Words that make a number a measurement rather than a setting: a figure with a unit in a
 * sentence that has one of them must be a marker. Settings ("a heartbeat every 10 s") stay prose.
 */
export const MEASURED =
  /\b(measured|median|p50|p99|benchmark|bench\/|per CPU-second|CPU-s|% of a core|cores at rest|load average|load ≈|at load|took|on a fresh clone|instructions per|of tests)\b/i;
/** A number with a unit of time, size or rate. */
export const FIGURE =
  /(?<![\w.])\d[\d,]*(?:\.\d+)?(?:\s?[–-]\s?\d[\d,]*(?:\.\d+)?)?\s?(?:ms|µs|s|min|MiB|KiB|GiB|MB|KB|kB|M\/s|M|%|frames\/s|deliveries\/s|writes\/min|req\/s|\/s|CPU-s)(?![\w])/g;

export interface Problem {
  doc: string;
  line: number;
  what: string;
}

/** What is wrong with one doc: stale markers, figures without provenance, unmarked measurements. */
export function check(doc: string, text: string, results: Results): Problem[] {
  const problems: Problem[] = [];
  let fresh: string;
  try {
    fresh = regenerate(text, results);
  } catch (e) {
    return [{ doc, line: 0, what: (e as Error).message }];
  }
  if (fresh !== text) {
    const a = text.split('\n');
    const b = fresh.split('\n');
    const i = a.findIndex((l, k) => l !== b[k]);
    problems.push({
      doc,
      line: i + 1,
      what: `figures differ from bench/results/ (first at this line; run npm run docs:figures): ${a[i]?.trim().slice(0, 160)}`,
    });
  }
  for (const b of blocks(text)) {
    const files = new Set([...b.text.matchAll(FIG)].map((m) => m[1]));
    const cited = new Set([...b.text.matchAll(SRC)].map((m) => m[1]));
    for (const f of files)
      if (!cited.has(f))
        problems.push({
          doc,
          line: b.line,
          what: `a figure from ${f} without <!--src ${f}--> in its paragraph or row`,
        });
    const bare = b.text
      .replace(FIG, '')
      .replace(SRC, '')
      .replace(/`[^`]*`/g, '');
    if (!MEASURED.test(bare)) continue;
    const unmarked = [...bare.matchAll(FIGURE)].map((m) => m[0]);
    if (unmarked.length > 0)
      problems.push({
        doc,
        line: b.line,
        what: `measured-looking figure(s) outside a marker: ${unmarked.slice(0, 4).join(', ')} — generate them from bench/results/ (<!--fig …-->), or word the sentence as a setting`,
      });
  }
  return problems;
}

function main(argv: string[]): number {
  const results = resultsReader();
  const checkOnly = argv.includes('--check');
  let bad = 0;
  for (const doc of figureDocs()) {
    const file = join(REPO, doc);
    const text = readFileSync(file, 'utf8');
    if (checkOnly) {
      for (const p of check(doc, text, results)) {
        bad++;
        process.stderr.write(`${p.doc}:${p.line}: ${p.what}\n`);
      }
      continue;
    }
    let fresh: string;
    try {
      fresh = regenerate(text, results);
    } catch (e) {
      process.stderr.write(`${doc}: ${(e as Error).message}\n`);
      bad++;
      continue;
    }
    if (fresh !== text) {
      writeFileSync(file, fresh);
      process.stdout.write(`updated ${doc}\n`);
    }
  }
  return bad > 0 ? 1 : 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = main(process.argv.slice(2));
