// Every measured figure in README.md and docs/*.md is generated from bench/results/ (issue #30,
// "make drift impossible"): a marker's text must equal what its results file gives, each
// paragraph or table row with figures names the results file with its date, CPU model and load,
// and a measured-looking number outside a marker fails. The convention: docs/testing.md, "Figures".
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  check,
  FIG,
  figureDocs,
  format,
  lookup,
  prose,
  type Results,
  regenerate,
  resultsReader,
} from '../../bench/doc-figures.ts';
import { REPO, resultsPath, saving } from '../../bench/results.ts';

const results = resultsReader();
const docs = figureDocs().map((doc) => ({ doc, text: readFileSync(join(REPO, doc), 'utf8') }));
const cited = (text: string): Set<string> => new Set([...prose(text).matchAll(FIG)].map((m) => m[1]));

describe('doc figures', () => {
  it.each(docs.map((d) => [d.doc, d.text]))(
    '%s: every figure equals bench/results/, with its provenance',
    (doc, text) => {
      expect(check(doc, text, results)).toEqual([]);
    },
  );

  it('the docs hold figures generated from results (the markers are in use)', () => {
    const files = new Set(docs.flatMap((d) => [...cited(d.text)]));
    expect(files.size).toBeGreaterThanOrEqual(5);
  });

  it('changing the numbers of any cited results file makes the check fail until the doc is regenerated', () => {
    // Every number changes but the keys markers select by (`rows[nodes=20]`).
    const selectors = new Set(docs.flatMap((d) => [...d.text.matchAll(/\[(\w+)=/g)].map((m) => m[1])));
    const scale = (v: unknown): unknown =>
      typeof v === 'number'
        ? v * 10 + 7
        : Array.isArray(v)
          ? v.map(scale)
          : v && typeof v === 'object'
            ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, selectors.has(k) ? x : scale(x)]))
            : v;
    let files = 0;
    for (const { doc, text } of docs) {
      for (const file of cited(text)) {
        files++;
        const changed: Results = (f) => (f === file ? scale(results(f)) : results(f));
        const problems = check(doc, text, changed);
        expect(
          problems.some((p) => p.what.includes('differ')),
          `${doc} with ${file} changed`,
        ).toBe(true);
        // ...and regenerating from the changed results makes it pass again.
        expect(
          check(doc, regenerate(text, changed), changed).filter((p) => p.what.includes('differ')),
        ).toEqual([]);
      }
    }
    expect(files).toBeGreaterThan(0);
  });
});

describe('markers', () => {
  const json = {
    rows: [
      { nodes: 2, s: 1.234 },
      { nodes: 20, s: 2.193 },
    ],
    runs: [3.3, 2.8, 4.5],
    big: 96295,
  };
  const r: Results = () => json;
  it('paths select by index and by field', () => {
    expect(lookup(json, 'rows[nodes=20].s')).toBe(2.193);
    expect(lookup(json, 'rows[0].nodes')).toBe(2);
    expect(() => lookup(json, 'rows[nodes=8].s')).toThrow(/nothing at/);
  });
  it('ops scale, reduce, round and group', () => {
    expect(format(96295, [','], 'x')).toBe('96,295');
    expect(format(2.193, ['d1'], 'x')).toBe('2.2');
    expect(format([3.3, 2.8, 4.5], ['range', 'd1'], 'x')).toBe('2.8–4.5');
    expect(format([3.3, 2.8, 4.5], ['median', 'd1'], 'x')).toBe('3.3');
    expect(format([-0.001, 149.2], ['range'], 'x')).toBe('0–149');
    expect(format(-0.04, ['d1'], 'x')).toBe('0.0');
    expect(format(-0.06, ['d1'], 'x')).toBe('-0.1');
    expect(format(54776908, ['/1e6'], 'x')).toBe('55');
    expect(() => format([1, 2], [], 'x')).toThrow(/reduce it/);
    expect(() => format(1, ['k3'], 'x')).toThrow(/unknown op/);
  });
  it('a paragraph with a figure and no provenance fails; with it, passes', () => {
    const withRec = {
      ...json,
      recorded: { date: '2026-12-01T00:00:00Z', cpuModel: 'CPU X', loadAverage1m: { start: 3, end: 4 } },
    };
    const rr: Results = () => withRec;
    const bare = 'Joins in <!--fig k.json rows[nodes=20].s d1-->2.2<!--/fig--> s.';
    expect(check('d', bare, rr).map((p) => p.what)).toEqual([
      expect.stringMatching(/without <!--src k.json-->/),
    ]);
    const good = `${bare} (<!--src k.json-->\`k.json\`, 2026-12-01, CPU X, load 3.0–4.0<!--/src-->)`;
    expect(check('d', good, rr)).toEqual([]);
    expect(check('d', good.replace('2.2', '2.3'), rr)[0].what).toMatch(/differ/);
    expect(() => regenerate('<!--src k.json-->x<!--/src-->', r)).toThrow(/no "recorded"/);
  });
  it('a measured-looking figure outside a marker fails; a setting does not', () => {
    expect(check('d', 'The relay adds 0.2 ms (p50) on loopback.', r)[0].what).toMatch(/outside a marker/);
    expect(check('d', 'A node heartbeats every 10 s; a frame is 32 bytes.', r)).toEqual([]);
    expect(check('d', '```\nmeasured 5 s\n```', r)).toEqual([]);
  });
});

describe('where a benchmark writes (bench/results.ts)', () => {
  it('a run without --save writes to the git-ignored .cache/bench-results/, never to bench/results/', () => {
    expect(saving(['node', 'run.ts'], {})).toBe(false);
    expect(resultsPath('air', false)).toBe(join(REPO, '.cache/bench-results/air.json'));
    const ignored = spawnSync('git', ['check-ignore', '-q', join(REPO, '.cache/bench-results/air.json')], {
      cwd: REPO,
    });
    expect(ignored.status, '.cache/ is git-ignored').toBe(0);
  });
  it('--save (or npm run bench -- X --save, which sets RETROKUBE_BENCH_SAVE=1) writes bench/results/', () => {
    expect(saving(['node', 'run.ts', '--save'], {})).toBe(true);
    expect(saving(['node', 'run.ts'], { RETROKUBE_BENCH_SAVE: '1' })).toBe(true);
    expect(resultsPath('air', true)).toBe(join(REPO, 'bench/results/air.json'));
  });
});
