// Where the apiserver's event loop stalls, from a V8 CPU profile of its main thread (what
// `run.ts --cpu-prof DIR` writes; run.ts puts the summary of each run's profile into its results).
// CLI: `node bench/sheets-scale/stalls.ts FILE.cpuprofile [--over MS] [--from S] [--all]`.
//
// A heartbeat's p50 is half a millisecond, so its p99 is stalls: every stretch of consecutive busy
// samples (not `(idle)`) longer than `over` ms (the p99 goal, 20) is found, and its time is given to
// a cause by the sample's stack: the reconcile (any frame of a reconcile pass or the scheduler), the
// garbage collector, the store's saves and journal (xlsx*.ts), or requests (HTTP, signing, the
// heartbeat transaction — including the backlog drained right after a stall). On a loaded host a
// thread that is descheduled shows as one long sample of whatever ran, so `requests` also holds
// time the kernel gave to other processes. So the thread's own CPU after `from` is also given by
// cause (`cpu_ms_by_cause`), leaving out samples longer than `over` (`descheduled_ms`: the profiler
// samples every millisecond, so such a sample is time the thread did not run): on a loaded host
// that, not the p99, is the figure that compares two versions of the code.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
export interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
}

export type Cause = 'reconcile' | 'gc' | 'store' | 'requests' | 'other';
// Functions whose presence on the stack makes a sample the reconcile's.
const RECONCILE =
  /^(#?reconcile|reconcilePass|#splitReconcile|readPass|schedulePass|planPass|applyPlan|schedule|tick)$/;
const STORE_FILE = /\/store\/xlsx[^/]*\.ts$/;

export interface StallSummary {
  over_ms: number;
  from_s: number;
  profiled_s: number;
  busy_s: number;
  stretches: number;
  stall_ms: number;
  longest_ms: number;
  by_cause_ms: Record<Cause, number>;
  longest: { at_s: number; ms: number; cause: Cause }[];
  cpu_ms_by_cause: Record<Cause, number>;
  descheduled_ms: number;
}

const r0 = (x: number) => Math.round(x);
const r2 = (x: number) => Math.round(x * 100) / 100;

export function stallsOf(prof: Profile, o: { overMs?: number; fromS?: number } = {}): StallSummary {
  const overMs = o.overMs ?? 20;
  const fromS = o.fromS ?? 0;
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const causeCache = new Map<number, Cause>();
  const causeOf = (id: number): Cause => {
    const hit = causeCache.get(id);
    if (hit) return hit;
    const self = byId.get(id)!.callFrame.functionName;
    let cause: Cause = self === '(garbage collector)' ? 'gc' : self === '(program)' ? 'other' : 'requests';
    if (cause === 'requests')
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
        const f = byId.get(at)!.callFrame;
        if (RECONCILE.test(f.functionName) && f.url.includes('/sheets/')) {
          cause = 'reconcile';
          break;
        }
        if (STORE_FILE.test(f.url)) cause = 'store';
      }
    causeCache.set(id, cause);
    return cause;
  };

  type Stretch = { at: number; ms: number; by: Map<Cause, number> };
  const stretches: Stretch[] = [];
  let t = prof.startTime;
  let cur: Stretch | undefined;
  let busyMs = 0;
  const cpu: Record<Cause, number> = { reconcile: 0, gc: 0, store: 0, requests: 0, other: 0 };
  let descheduled = 0;
  const close = () => {
    if (cur && cur.ms > overMs && cur.at >= fromS) stretches.push(cur);
    cur = undefined;
  };
  for (let i = 0; i < prof.samples.length; i++) {
    t += prof.timeDeltas[i];
    const dt = (prof.timeDeltas[i + 1] ?? 0) / 1000; // the time this sample stands for
    if (byId.get(prof.samples[i])!.callFrame.functionName === '(idle)') {
      close();
      continue;
    }
    busyMs += dt;
    cur ??= { at: (t - prof.startTime) / 1e6, ms: 0, by: new Map() };
    cur.ms += dt;
    const c = causeOf(prof.samples[i]);
    cur.by.set(c, (cur.by.get(c) ?? 0) + dt);
    if ((t - prof.startTime) / 1e6 < fromS) continue;
    if (dt > overMs) descheduled += dt;
    else cpu[c] += dt;
  }
  close();
  const byCause: Record<Cause, number> = { reconcile: 0, gc: 0, store: 0, requests: 0, other: 0 };
  for (const s of stretches) for (const [c, v] of s.by) byCause[c] += v;
  for (const c of Object.keys(byCause) as Cause[]) byCause[c] = r0(byCause[c]);
  const main = (s: Stretch) => [...s.by].sort((a, b) => b[1] - a[1])[0][0];
  return {
    over_ms: overMs,
    from_s: r2(fromS),
    profiled_s: r2((t - prof.startTime) / 1e6),
    busy_s: r2(busyMs / 1000),
    stretches: stretches.length,
    stall_ms: r0(stretches.reduce((a, s) => a + s.ms, 0)),
    longest_ms: r0(Math.max(0, ...stretches.map((s) => s.ms))),
    by_cause_ms: byCause,
    longest: [...stretches]
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 5)
      .map((s) => ({ at_s: r2(s.at), ms: r0(s.ms), cause: main(s) })),
    cpu_ms_by_cause: Object.fromEntries(Object.entries(cpu).map(([c, v]) => [c, r0(v)])) as Record<
      Cause,
      number
    >,
    descheduled_ms: r0(descheduled),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: stalls.ts FILE.cpuprofile [--over MS] [--from S]');
  const opt = (name: string) =>
    process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : undefined;
  const prof = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  console.log(JSON.stringify(stallsOf(prof, { overMs: opt('--over'), fromS: opt('--from') }), null, 2));
}
