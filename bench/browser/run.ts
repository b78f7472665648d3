import os from 'node:os';
import { gzipSync } from 'node:zlib';
import { serveLab } from '../../operator/src/console/lab.ts';
import { launch, waitConverged } from '../../test/browser/chromium.ts';
import { startRecording, writeResults } from '../results.ts';

const record = startRecording();

const quick = process.argv.includes('--quick');
const RUNS = quick ? 1 : 3;
const BENCH_MS = quick ? 2000 : 4000;

interface LabHandle {
  speeds(): Record<string, { instrPerSecond: number; busy: number }>;
  bench(name: string, ms: number): Promise<number>;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const lab = await serveLab();
const weight = Object.fromEntries(
  [...lab.files].map(([p, f]) => [p.slice(1), { bytes: f.body.length, gzipBytes: gzipSync(f.body).length }]),
);
const total = Object.values(weight).reduce((s, w) => s + w.bytes, 0);
const totalGzip = Object.values(weight).reduce((s, w) => s + Math.min(w.bytes, w.gzipBytes), 0);

const loads: number[] = [];
const flatOut: Record<string, number[]> = { plane: [], 'node-a': [], 'node-b': [] };
let paced: Record<string, { instrPerSecond: number; busy: number }> = {};
const browser = await launch();
try {
  for (let run = 0; run < RUNS; run++) {
    const page = await browser.context.newPage();
    const t0 = performance.now();
    await page.goto(lab.url);
    await waitConverged(page, 300_000, 100);
    loads.push((performance.now() - t0) / 1000);
    await page.waitForTimeout(5000); // at rest, for the paced rate
    paced = await page.evaluate(() =>
      (globalThis as unknown as { retrokubeLab: LabHandle }).retrokubeLab.speeds(),
    );
    for (const m of Object.keys(flatOut)) {
      const r = await page.evaluate(
        ([name, ms]) => (globalThis as unknown as { retrokubeLab: LabHandle }).retrokubeLab.bench(name, ms),
        [m, BENCH_MS] as [string, number],
      );
      flatOut[m].push(r);
    }
    await page.close();
  }
} finally {
  await browser.close();
  await lab.close();
}

const results = {
  host: { cpus: os.cpus().length, model: os.cpus()[0]?.model, loadAverage: os.loadavg()[0] },
  chromium: 'Debian chromium, headless (test/browser/chromium.ts flags)',
  pageWeight: { files: weight, totalBytes: total, totalGzipBytes: totalGzip },
  loadToConvergedSeconds: { runs: loads, median: median(loads) },
  instructionsPerSecond: {
    flatOut: Object.fromEntries(
      Object.entries(flatOut).map(([m, xs]) => [m, { runs: xs, median: median(xs) }]),
    ),
    pacedAtRest: paced,
    reference: 'under 1 M per machine (Wirth RTL compiled to WebAssembly), with machine time run 10× faster',
  },
};
const out = writeResults('browser-lab', results, record);
const M = (x: number) => `${(x / 1e6).toFixed(1)} M`;
console.log(`page weight ${(total / 1024).toFixed(0)} KiB (${(totalGzip / 1024).toFixed(0)} KiB gzipped)`);
console.log(`page load → converged: ${loads.map((s) => s.toFixed(1)).join(', ')} s`);
for (const [m, xs] of Object.entries(flatOut))
  console.log(`${m}: flat out ${xs.map(M).join(', ')} instructions/s`);
console.log(
  `paced at rest: ${Object.entries(paced)
    .map(([m, s]) => `${m} ${M(s.instrPerSecond)}/s`)
    .join(', ')}`,
);
console.log(`load average ${os.loadavg()[0].toFixed(1)}; written to ${out}`);
