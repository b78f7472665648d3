// Side by side: where the operator's RSS goes with many OberonKubes, and what a process setting
// (glibc's malloc arenas, Node's compile cache) changes of it. One kube-apiserver (etcd), one
// operator per variant, each watching a namespace of its own; the variants' clusters are created
// in turn (one for each, then the next), so every operator sees the same load at the same time.
// Once every cluster of every namespace has its plane (settled, as in kube.ts), each operator is
// sampled: VmRSS / VmHWM, /proc/PID/smaps_rollup (anonymous vs file-backed) and its mappings
// grouped by what backs them, and what V8 says of its heap (mem-probe.js, on SIGUSR2); then the
// latency of a change (kube.ts's phase, with its stages) of each, in turns.
//   node_modules/.bin/node bench/operator/rss-variants.ts [--count 200] [--datastore etcd]
//     [--variants image,arena2,compileCache,cacheArena2] [--baseline DIR (adds the variants baseline,
//     baselineCacheArena2)] [--gc-after (then a full GC in each: its live heap and RSS after)]
//     [--snapshot-dir DIR (then a heap snapshot of each there: analysis, not a measurement)] [--save]
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { KINDS_OWNED, OBERONMACHINE } from '../../operator/src/controllers/oberonmachine.ts';
import { CORE, KubeClient, type KubeObject } from '../../operator/src/runtime/client.ts';
import { REPO_ROOT, startControlPlane } from '../../test/envtest/control-plane.ts';
import { startRecording, writeResults } from '../results.ts';
import { prepareNamespace } from './harness.ts';
import { createKube, kubeChangeProbe } from './kube-objects.ts';
import {
  cpuSeconds,
  mib,
  NO_COMPILE_CACHE,
  type Operator,
  type StartVariant,
  sleep,
  startOperator,
  statusMiB,
  stopOperator,
} from './operator-process.ts';
import { type ChangeStages, changeLatency, percentiles, stagePercentiles } from './phases.ts';

const LIMITS = {
  concurrency: 16, // creations in flight, over all variants
  pollMs: 5_000, // how often the settle check LISTs
  settleTimeoutMs: 30 * 60_000, // every plane (created 120 s after its cluster) by then, or the run fails
  samples: 3, // RSS samples at rest, `sampleGapMs` apart (their median is the figure)
  sampleGapMs: 10_000,
  changes: 30, // per variant, in turns of `changeTurn` (kube.ts's latency phase, side by side)
  changeTurn: 5,
  probeWaitMs: 2_000, // for mem-probe.js to write its file after SIGUSR2 (a full GC included)
  snapshotWaitMs: 60_000, // ...and a heap snapshot after it (--snapshot-dir)
  warmSettleMs: 1_000, // after a warm-up start is ready, before it is stopped (starts.ts)
} as const;

const PROBE = pathToFileURL(join(REPO_ROOT, 'bench/operator/mem-probe.js')).href;
const MAIN = join(REPO_ROOT, 'operator/src/cli/main.ts');
const BIN = join(REPO_ROOT, 'operator/bin/retrokube.js');

/** glibc: two malloc arenas; the mmap threshold fixed at its initial 128 KiB, the heap trimmed past 128 KiB free. */
const TRIM = {
  MALLOC_ARENA_MAX: '2',
  MALLOC_MMAP_THRESHOLD_: '131072',
  MALLOC_TRIM_THRESHOLD_: '131072',
} as const;

/** The variants a run may compare (`cache` is this run's temp folder for compile caches). */
function catalogue(cache: string, baseline: string | undefined): Record<string, Omit<StartVariant, 'name'>> {
  const cached = (dir: string) => ({
    XDG_CACHE_HOME: join(cache, dir),
    NODE_COMPILE_CACHE: undefined,
    NODE_DISABLE_COMPILE_CACHE: undefined,
  });
  return {
    // Another checkout's operator as kube.ts runs it (--baseline DIR, e.g. main's: `git archive main
    // | tar -x -C DIR`, with a node_modules): A of an A/B, same API server, same load.
    ...(baseline
      ? {
          baseline: { entry: join(resolve(baseline), 'operator/src/cli/main.ts'), env: NO_COMPILE_CACHE },
          // ...and as the image runs it (compile cache, two arenas): cacheArena2's A.
          baselineCacheArena2: {
            entry: join(resolve(baseline), 'operator/bin/retrokube.js'),
            warmUp: true,
            env: { ...cached('baselineCacheArena2'), MALLOC_ARENA_MAX: '2' },
          },
        }
      : {}),
    // kube.ts's run operator: the sources with no compile cache (Node's type stripper loaded).
    image: { entry: MAIN, env: NO_COMPILE_CACHE },
    arena2: { entry: MAIN, env: { ...NO_COMPILE_CACHE, MALLOC_ARENA_MAX: '2' } },
    // ...and glibc's mmap threshold fixed (a freed large block otherwise raises it, up to 32 MiB,
    // and later blocks that size stay in the arenas), the heap trimmed past 128 KiB free.
    arena2Trim: { entry: MAIN, env: { ...NO_COMPILE_CACHE, ...TRIM } },
    // As the image runs: its compile cache holds every module stripped and compiled.
    compileCache: { entry: BIN, warmUp: true, env: cached('compileCache') },
    cacheArena2: { entry: BIN, warmUp: true, env: { ...cached('cacheArena2'), MALLOC_ARENA_MAX: '2' } },
    cacheTrim: { entry: BIN, warmUp: true, env: { ...cached('cacheTrim'), ...TRIM } },
    // ...and V8's semi-spaces capped at 1 MiB (NODE_OPTIONS: read when the heap is made).
    cacheTrimSemi1: {
      entry: BIN,
      warmUp: true,
      env: { ...cached('cacheTrimSemi1'), ...TRIM, NODE_OPTIONS: '--max-semi-space-size=1' },
    },
  };
}

const record = startRecording();
const { values: args } = parseArgs({
  options: {
    count: { type: 'string', default: '200' },
    datastore: { type: 'string', default: 'etcd' },
    variants: { type: 'string', default: 'image,arena2,compileCache,cacheArena2' },
    baseline: { type: 'string' },
    'gc-after': { type: 'boolean', default: false },
    'snapshot-dir': { type: 'string' },
    save: { type: 'boolean', default: false }, // read by results.ts (saving())
  },
});
const count = Number(args.count);
if (!Number.isInteger(count) || count < 1) throw new Error('--count must be a positive integer');
if (args.datastore !== 'etcd' && args.datastore !== 'kine') throw new Error('--datastore: kine or etcd');
// Made before any operator starts: its probe writes the snapshot there, and a missing folder killed
// both operators (and lost the run's figures) at the end of a 12-minute run.
if (args['snapshot-dir']) mkdirSync(resolve(args['snapshot-dir']), { recursive: true });
const tmp = mkdtempSync(join(tmpdir(), 'rk-rss-variants-'));
const known = catalogue(tmp, args.baseline);
const variants = String(args.variants)
  .split(',')
  .map((name) => {
    const v = known[name];
    if (!v) throw new Error(`unknown variant ${name}: ${Object.keys(known).join(', ')}`);
    const probeOut = join(tmp, `${name}.probe.json`);
    return {
      name,
      namespace: `rss-${name.toLowerCase()}`,
      probeOut,
      ...v,
      env: {
        ...v.env,
        NODE_OPTIONS: [v.env?.NODE_OPTIONS, `--import=${PROBE}`].filter(Boolean).join(' '),
        RK_MEM_PROBE_OUT: probeOut,
        RK_MEM_PROBE_GC: args['gc-after'] ? '1' : undefined,
        RK_MEM_PROBE_SNAPSHOT: args['snapshot-dir']
          ? join(resolve(args['snapshot-dir']), `${name}.heapsnapshot`)
          : undefined,
      },
    };
  });

const plane = await startControlPlane({ datastore: args.datastore });
const k = KubeClient.fromDefault(plane.kubeconfigPath);
const ops = new Map<string, Operator>();
try {
  // The first also gets the Service range every namespace's Services need (one is enough).
  for (const [i, v] of variants.entries()) {
    if (i === 0) await prepareNamespace(k, v.namespace);
    else
      await k.create(CORE.namespace, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: v.namespace },
      });
  }
  for (const v of variants) {
    if (v.warmUp) {
      // Fills its compile cache: written once the operator runs (operator-run.ts flushes it).
      const warm = await startOperator(v, plane.kubeconfigPath, v.namespace);
      await sleep(LIMITS.warmSettleMs);
      await stopOperator(warm);
    }
    ops.set(v.name, await startOperator(v, plane.kubeconfigPath, v.namespace));
  }
  const atStart = Object.fromEntries([...ops].map(([name, op]) => [name, mib(statusMiB(op.pid, 'VmRSS'))]));
  console.log(`at start (VmRSS MiB): ${JSON.stringify(atStart)}; load ${loadavg()[0]?.toFixed(1)}`);

  const t0 = performance.now();
  const jobs = Array.from({ length: count }, (_, i) => variants.map((v) => ({ i, ns: v.namespace }))).flat();
  let next = 0;
  await Promise.all(
    Array.from({ length: LIMITS.concurrency }, async () => {
      while (next < jobs.length) {
        const job = jobs[next++] as { i: number; ns: string };
        await createKube(k, job.ns, job.i);
      }
    }),
  );
  console.log(`created ${jobs.length} OberonKubes in ${((performance.now() - t0) / 1000).toFixed(0)} s`);

  for (;;) {
    const settled = await Promise.all(variants.map((v) => planes(k, v.namespace)));
    console.log(
      `settled: ${settled.join(' / ')} of ${count} (${((performance.now() - t0) / 1000).toFixed(0)} s)`,
    );
    if (settled.every((n) => n === count)) break;
    if (performance.now() - t0 > LIMITS.settleTimeoutMs) throw new Error('not settled in time');
    await sleep(LIMITS.pollMs);
  }
  const settleSeconds = Math.round((performance.now() - t0) / 1000);

  const samples = new Map<string, number[]>(variants.map((v) => [v.name, []]));
  for (let s = 0; s < LIMITS.samples; s++) {
    await sleep(LIMITS.sampleGapMs);
    for (const [name, op] of ops) samples.get(name)?.push(mib(statusMiB(op.pid, 'VmRSS')));
  }
  // The change latency of each, in turns, every operator at rest (kube.ts's phase).
  const latency = new Map(
    variants.map((v) => [v.name, { ms: [] as number[], stages: [] as ChangeStages[] }]),
  );
  for (let r = 0; r < LIMITS.changes; r += LIMITS.changeTurn) {
    for (const v of variants) {
      const l = latency.get(v.name) as { ms: number[]; stages: ChangeStages[] };
      l.ms.push(
        ...(await changeLatency(k, v.namespace, kubeChangeProbe, count, LIMITS.changeTurn, r, l.stages)),
      );
    }
  }
  for (const op of ops.values()) process.kill(op.pid, 'SIGUSR2');
  await sleep(args['snapshot-dir'] ? LIMITS.snapshotWaitMs : LIMITS.probeWaitMs);

  const result = {
    benchmark: 'operator-rss-variants',
    date: new Date().toISOString(),
    datastore: plane.datastore,
    objectsPerVariant: count,
    settleSeconds,
    loadAverage1m: +(loadavg()[0] ?? 0).toFixed(1),
    variants: Object.fromEntries(
      variants.map((v) => {
        const op = ops.get(v.name) as Operator;
        const rs = [...(samples.get(v.name) ?? [])].sort((a, b) => a - b);
        return [
          v.name,
          {
            rssAtStartMiB: atStart[v.name],
            rssAtRestMiB: rs[rs.length >> 1],
            rssSamplesMiB: samples.get(v.name),
            peakRssMiB: mib(statusMiB(op.pid, 'VmHWM')),
            cpuSeconds: +cpuSeconds(op.pid).toFixed(1),
            changeToChildWriteMs: percentiles(latency.get(v.name)?.ms ?? []),
            changeStagesMs: stagePercentiles(latency.get(v.name)?.stages ?? []),
            threads: Number(/Threads:\s+(\d+)/.exec(readFileSync(`/proc/${op.pid}/status`, 'utf8'))?.[1]),
            smapsRollup: rollup(op.pid),
            byMapping: byMapping(op.pid),
            v8: JSON.parse(readFileSync(v.probeOut, 'utf8')),
          },
        ];
      }),
    ),
  };
  console.log(JSON.stringify(result, null, 2));
  writeResults('operator-rss-variants', result, record);
} finally {
  for (const op of ops.values()) await stopOperator(op);
  k.close();
  await plane.stop();
  rmSync(tmp, { recursive: true, force: true });
}

/** Clusters whose plane machine has its StatefulSet released (kube.ts's settled). */
async function planes(kc: KubeClient, ns: string): Promise<number> {
  const [machines, stss] = await Promise.all([
    kc.list<KubeObject>(OBERONMACHINE, ns),
    kc.list<KubeObject & { spec?: { replicas?: number } }>(KINDS_OWNED.statefulSet, ns),
  ]);
  const released = new Set(stss.items.filter((o) => o.spec?.replicas === 1).map((o) => o.metadata.name));
  return machines.items.filter(
    (m) => String(m.metadata.name).endsWith('-plane') && released.has(`rk-m-${m.metadata.name}`),
  ).length;
}

/** /proc/PID/smaps_rollup's fields, MiB. */
function rollup(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8').matchAll(/^(\w+):\s+(\d+) kB/gm))
    out[m[1] as string] = mib(Number(m[2]) / 1024);
  return out;
}

/**
 * RSS by what backs each mapping, MiB: a file (node, a library), [heap] (glibc's main arena),
 * [stack], or anonymous (V8's heap pages, other malloc arenas, wasm memory, thread stacks).
 */
function byMapping(pid: number): Record<string, number> {
  const kb = new Map<string, number>();
  let name = '';
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      const path = head[1] ?? '';
      name = path === '' ? 'anonymous' : path.startsWith('[') ? path : path.split('/').pop() || path;
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) kb.set(name, (kb.get(name) ?? 0) + Number(rss[1]));
  }
  return Object.fromEntries(
    [...kb]
      .filter(([, v]) => v >= 512)
      .sort((a, b) => b[1] - a[1])
      .map(([n, v]) => [n, mib(v / 1024)]),
  );
}
