// Where the apiserver's event loop stalls (`node bench/sheets-scale/stalls.ts FILE.cpuprofile
// [--over MS]`): reads a V8 CPU profile (from `run.ts --cpu-prof DIR`) and finds every stretch of
// consecutive busy samples (not `(idle)`) longer than --over ms (default 20: the p99 goal). A heartbeat
// that arrives during such a stretch waits for it, so these stretches are the p99. Each stretch's time
// is attributed to the deepest frame of our own code on the stack (operator/src/...), or to the
// runtime's `(garbage collector)` / `(program)`, and the totals over all stretches are printed,
// largest first, with the five longest stretches and their top frames.
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
}

const file = process.argv[2];
if (!file) throw new Error('usage: stalls.ts FILE.cpuprofile [--over MS]');
const overAt = process.argv.indexOf('--over');
const OVER_MS = overAt > 0 ? Number(process.argv[overAt + 1]) : 20;
const OURS = '/operator/src/';

const prof = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const frameName = (n: ProfileNode) => {
  const f = n.callFrame;
  const where = f.url ? `${f.url.slice(f.url.lastIndexOf('/') + 1)}:${f.lineNumber + 1}` : '';
  return `${f.functionName || '(anonymous)'}${where ? ` ${where}` : ''}`;
};

// The attribution of one sample: GC and (program) as themselves, else the deepest frame of ours.
const attrCache = new Map<number, string>();
function attribution(id: number): string {
  const hit = attrCache.get(id);
  if (hit) return hit;
  const self = byId.get(id)!;
  let name = frameName(self);
  if (!self.callFrame.functionName.startsWith('(')) {
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const n = byId.get(at)!;
      if (n.callFrame.url.includes(OURS)) {
        name = `${frameName(n)} (self ${frameName(self)})`;
        break;
      }
    }
  }
  attrCache.set(id, name);
  return name;
}

interface Stall {
  startMs: number;
  ms: number;
  by: Map<string, number>;
}
const stalls: Stall[] = [];
let t = prof.startTime;
let cur: Stall | undefined;
let busyMs = 0;
for (let i = 0; i < prof.samples.length; i++) {
  t += prof.timeDeltas[i];
  const dt = (prof.timeDeltas[i + 1] ?? 0) / 1000; // the time this sample stands for
  const n = byId.get(prof.samples[i])!;
  if (n.callFrame.functionName === '(idle)') {
    if (cur && cur.ms > OVER_MS) stalls.push(cur);
    cur = undefined;
    continue;
  }
  busyMs += dt;
  cur ??= { startMs: (t - prof.startTime) / 1000, ms: 0, by: new Map() };
  cur.ms += dt;
  const a = attribution(prof.samples[i]);
  cur.by.set(a, (cur.by.get(a) ?? 0) + dt);
}
if (cur && cur.ms > OVER_MS) stalls.push(cur);

const total = new Map<string, number>();
for (const s of stalls) for (const [k, v] of s.by) total.set(k, (total.get(k) ?? 0) + v);
const stallMs = stalls.reduce((a, s) => a + s.ms, 0);
const durMs = (t - prof.startTime) / 1000;
console.log(
  `${file}: ${(durMs / 1000).toFixed(1)} s profiled, busy ${(busyMs / 1000).toFixed(1)} s; ${stalls.length} stretches > ${OVER_MS} ms, ${(stallMs / 1000).toFixed(2)} s in them`,
);
const top = (m: Map<string, number>, k: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, k);
for (const [k, v] of top(total, 25)) console.log(`${v.toFixed(0).padStart(8)} ms  ${k}`);
if (process.argv.includes('--all'))
  for (const s of stalls)
    console.log(
      `  ${(s.startMs / 1000).toFixed(2)} s ${s.ms.toFixed(0)} ms: ${top(s.by, 3)
        .map(([k, v]) => `${k.split(' (self')[0]} ${v.toFixed(0)}`)
        .join(' · ')}`,
    );
console.log('longest:');
for (const s of [...stalls].sort((a, b) => b.ms - a.ms).slice(0, 5)) {
  console.log(`  at ${(s.startMs / 1000).toFixed(2)} s: ${s.ms.toFixed(0)} ms`);
  for (const [k, v] of top(s.by, 4)) console.log(`    ${v.toFixed(0).padStart(6)} ms  ${k}`);
}
