// The six self-checking labs of the reference's browser lab (kube-on-oberon spec §9), judged only
// from what the air carries: each breaks the cluster through the same actions the page's buttons
// use, then waits for what a healthy cluster must show, and says pass or fail with the figures.
// Browser-safe (no Node imports): the page runs them against the console server or the lab.
import type { ClusterView, FrameRecord } from '../air/view.ts';
import type { AirOp, ConsoleState, Done, InjectReport, IntruderKind } from './types.ts';
import { INTRUDERS } from './types.ts';

export const LIMITS = {
  formMs: 240_000, // lab 1: a cold lab boots three machines first; a loaded host is slow
  rolloutMs: 180_000, // lab 2: typing the command, then one pod replaced per plane round
  failoverMs: 90_000, // lab 3: 5-s timeout + 2-s grace + one round, with room for a busy host
  rejoinMs: 120_000, // lab 3: the dead node boots again and is heard
  airOffMs: 10_000, // lab 4: twice the 5-s node timeout, so the plane really hears nobody
  settleMs: 3_000, // lab 4: "checked 3 beat periods after the air returns"
  convergeMs: 90_000, // labs 4, 5: converged again after a break
  intruderBeats: 3, // lab 5: heartbeats of the attacked node judged after its last forgery
  intruderMs: 60_000, // lab 5: per button: three plane assignments to hear, then the heartbeats
  planeOffMs: 5_000, // lab 6: the plane stays off this long
  planeAssignments: 4, // lab 6: assignments heard after power on before it is judged
  planeBackMs: 120_000, // lab 6: boot, Start, Serve, restart grace, first rounds
  pollMs: 250, // how often a waiting lab looks at the view
} as const;

/** What a lab may see and do: the page's backend and what it heard. */
export interface LabWorld {
  state(): ConsoleState;
  view(): ClusterView;
  records(): readonly FrameRecord[];
  power(name: string, on: boolean): Promise<Done>;
  air(op: AirOp): Promise<Done>;
  inject(kind: IntruderKind): Promise<InjectReport>;
  command(text: string): Promise<Done>;
  sleep(ms: number): Promise<void>;
  /** Page clock for deadlines (never compared with the air's times). */
  now(): number;
}

export interface LabResult {
  pass: boolean;
  detail: string;
}

export interface Lab {
  n: number;
  title: string;
  goal: string;
  run(w: LabWorld, progress: (text: string) => void): Promise<LabResult>;
}

const key = (ids: readonly number[] | null | undefined): string =>
  ids ? [...ids].sort((a, b) => a - b).join(' ') : '-';

/** Waits until `test` returns true (else a progress text) or the time is up; returns the last text. */
async function until(
  w: LabWorld,
  test: () => true | string,
  ms: number,
  progress: (t: string) => void,
): Promise<{ ok: boolean; text: string; ms: number }> {
  const start = w.now();
  let text = '';
  for (;;) {
    const r = test();
    if (r === true) return { ok: true, text, ms: w.now() - start };
    text = r;
    progress(`${r} (${Math.round((w.now() - start) / 1000)} s)`);
    if (w.now() - start > ms) return { ok: false, text, ms: w.now() - start };
    await w.sleep(LIMITS.pollMs);
  }
}

const readyNames = (v: ClusterView): string[] => v.nodes.filter((n) => n.ready).map((n) => n.name);

function placement(v: ClusterView): Map<string, string> {
  return new Map(v.nodes.filter((n) => n.ready).map((n) => [n.name, key(n.assigned)]));
}

/** Accepted assignments heard since `at` whose ids differ from the placement. */
function changedSince(w: LabWorld, at: number, before: Map<string, string>): FrameRecord[] {
  return w
    .records()
    .filter(
      (r) =>
        r.t >= at &&
        r.verdict === 'ok' &&
        r.kind === 'assign' &&
        r.node !== undefined &&
        before.has(r.node) &&
        key(r.ids) !== before.get(r.node),
    );
}

const converged = (v: ClusterView, pods: number): true | string =>
  v.converged && v.running >= pods && v.duplicates.length === 0
    ? true
    : `nodes Ready ${v.readyNodes}/${v.nodes.length}, pods running ${v.running}/${pods}${v.converged ? '' : ', converging'}`;

/** Running pods whose image (as the plane's specs announced it) is `image`. */
const runningWith = (v: ClusterView, image: string): number =>
  v.pods.filter((p) => p.runningOn.length > 0 && p.image === image).length;

export const LABS: Lab[] = [
  {
    n: 1,
    title: 'The cluster forms',
    goal: 'at least 2 nodes heard, the deployment running, every node running what it was assigned',
    run: async (w, progress) => {
      const want = w.state().deployment.replicas;
      const r = await until(
        w,
        () => {
          const v = w.view();
          if (v.readyNodes < 2) return `nodes Ready ${v.readyNodes}/2`;
          return converged(v, want);
        },
        LIMITS.formMs,
        progress,
      );
      const v = w.view();
      return {
        pass: r.ok,
        detail: r.ok
          ? `${v.readyNodes} nodes Ready, ${v.running} pods running as assigned`
          : `not formed: ${r.text}`,
      };
    },
  },
  {
    n: 2,
    title: 'Rolling update',
    goal: 'Kube.Apply with the other module: every pod replaced, never fewer running than wanted, at most one extra',
    run: async (w, progress) => {
      const d = w.state().deployment;
      const v0 = w.view();
      const total = v0.running;
      const old = v0.pods.some((p) => p.runningOn.length > 0 && p.image === 'Ticker2') ? 'Ticker2' : 'Ticker';
      const next = old === 'Ticker2' ? 'Ticker' : 'Ticker2';
      const target = runningWith(v0, next) + d.replicas;
      const cmd = `Kube.Apply ${d.name} ${d.replicas} ${next}`;
      progress(`typing "${cmd}" into the plane`);
      await w.command(cmd);
      let min = total;
      let max = total;
      const r = await until(
        w,
        () => {
          const v = w.view();
          min = Math.min(min, v.running);
          max = Math.max(max, v.running);
          const now = runningWith(v, next);
          if (now < target) return `${now}/${target} pods run ${next}; running ${min}…${max} so far`;
          if (v.running !== total) return `${v.running - total} old pods still running`;
          return converged(v, total);
        },
        LIMITS.rolloutMs,
        progress,
      );
      const bounds = min >= total && max <= total + 1;
      return {
        pass: r.ok && bounds,
        detail: `${r.ok ? `rolled out to ${next} in ${(r.ms / 1000).toFixed(1)} s` : `not rolled out: ${r.text}`}; pods running during the rollout ${min}…${max} (expected ${total}…${total + 1})`,
      };
    },
  },
  {
    n: 3,
    title: 'A node dies',
    goal: 'the busiest node switched off: its pods run on the others; switched on, it joins again',
    run: async (w, progress) => {
      const calm = await until(w, () => converged(w.view(), 1), LIMITS.convergeMs, progress);
      if (!calm.ok) return { pass: false, detail: `not converged before: ${calm.text}` };
      const v0 = w.view();
      const total = v0.running;
      const ready = v0.nodes.filter((n) => n.ready);
      if (ready.length < 2) return { pass: false, detail: 'needs at least 2 Ready nodes (run lab 1 first)' };
      const victim = ready.reduce((a, b) => (b.running.length > a.running.length ? b : a)).name;
      progress(`switching ${victim} off`);
      await w.power(victim, false);
      const r = await until(
        w,
        () => {
          const v = w.view();
          const n = v.nodes.find((x) => x.name === victim);
          if (n?.ready) return `${victim} still heard (${((n.ageMs ?? 0) / 1000).toFixed(1)} s ago)`;
          if (v.pods.some((p) => p.runningOn.includes(victim))) return `pods still on ${victim}`;
          return converged(v, total);
        },
        LIMITS.failoverMs,
        progress,
      );
      progress(`switching ${victim} on again`);
      await w.power(victim, true);
      const back = await until(
        w,
        () => (readyNames(w.view()).includes(victim) ? converged(w.view(), total) : `${victim} booting`),
        LIMITS.rejoinMs,
        progress,
      );
      return {
        pass: r.ok && back.ok,
        detail: `${r.ok ? `${victim}'s pods ran elsewhere ${(r.ms / 1000).toFixed(1)} s after power off` : `no failover: ${r.text}`}; ${back.ok ? `${victim} back in ${(back.ms / 1000).toFixed(1)} s` : `${victim} did not come back: ${back.text}`}`,
      };
    },
  },
  {
    n: 4,
    title: 'The air dies',
    goal: `the whole air off for ${LIMITS.airOffMs / 1000} s: afterwards the same pods run on the same nodes, no assignment changed`,
    run: async (w, progress) => {
      const total = w.view().running;
      const ok = await until(w, () => converged(w.view(), total), LIMITS.convergeMs, progress);
      if (!ok.ok) return { pass: false, detail: `not converged before the outage: ${ok.text}` };
      const before = placement(w.view());
      progress('air off');
      await w.air({ op: 'off' });
      await w.sleep(LIMITS.airOffMs);
      const back = await w.air({ op: 'on' });
      const r = await until(w, () => converged(w.view(), total), LIMITS.convergeMs, progress);
      progress('air back; judging three beat periods');
      await w.sleep(LIMITS.settleMs);
      const changed = changedSince(w, back.at, before);
      const after = placement(w.view());
      const same = [...before].every(([n, ids]) => after.get(n) === ids);
      return {
        pass: r.ok && changed.length === 0 && same,
        detail: `${r.ok ? `converged ${(r.ms / 1000).toFixed(1)} s after the air returned` : `not converged: ${r.text}`}; ${changed.length} changed assignments; placement ${same ? 'unchanged' : 'CHANGED'}`,
      };
    },
  },
  {
    n: 5,
    title: 'Intruders',
    goal: 'forged assignments ("run nothing") to the busiest node: another cluster, unsigned and a replay are ignored; one signed with the key is obeyed',
    run: async (w, progress) => {
      const lines: string[] = [];
      let pass = true;
      for (const kind of INTRUDERS) {
        const total = w.view().running;
        const calm = await until(w, () => converged(w.view(), total), LIMITS.convergeMs, progress);
        if (!calm.ok)
          return { pass: false, detail: `${lines.join('; ')} not converged before "${kind}": ${calm.text}` };
        progress(`intruder "${kind}": waiting for the plane's next assignments`);
        let rep: InjectReport;
        try {
          rep = await w.inject(kind);
        } catch (e) {
          return {
            pass: false,
            detail: `${lines.join('; ')} intruder "${kind}" failed: ${(e as Error).message}`,
          };
        }
        const first = rep.times[0];
        const last = rep.times[rep.times.length - 1];
        const beats = (): FrameRecord[] =>
          w
            .records()
            .filter(
              (r) => r.verdict === 'ok' && r.kind === 'heartbeat' && r.node === rep.node && r.t >= first,
            );
        const r = await until(
          w,
          () => {
            const after = beats().filter((b) => b.t > last).length;
            return after >= LIMITS.intruderBeats
              ? true
              : `"${kind}": ${after}/${LIMITS.intruderBeats} heartbeats of ${rep.node} after it`;
          },
          LIMITS.intruderMs,
          progress,
        );
        const heard = beats();
        const obeyed = heard.some((b) => key(b.ids) === key(rep.forgedIds));
        const kept = heard.every((b) => key(b.ids) === key(rep.before));
        const expectObey = kind === 'signed';
        const good = r.ok && (expectObey ? obeyed : kept);
        pass &&= good;
        lines.push(
          `${kind}: ${heard.length} heartbeats, ${expectObey ? (obeyed ? 'obeyed (as it must: it is signed)' : 'NOT obeyed') : kept ? 'ignored' : 'OBEYED'}${rep.note ? ` (${rep.note})` : ''}`,
        );
      }
      const total = w.view().running;
      const restored = await until(w, () => converged(w.view(), total), LIMITS.convergeMs, progress);
      return {
        pass: pass && restored.ok,
        detail: `${lines.join('; ')}; ${restored.ok ? 'the plane restored the truth' : `not restored: ${restored.text}`}`,
      };
    },
  },
  {
    n: 6,
    title: 'The plane restarts',
    goal: `the plane off for ${LIMITS.planeOffMs / 1000} s and on: it reads its store from disk, and its first ${LIMITS.planeAssignments} assignments change nothing`,
    run: async (w, progress) => {
      const total = w.view().running;
      const ok = await until(w, () => converged(w.view(), total), LIMITS.convergeMs, progress);
      if (!ok.ok) return { pass: false, detail: `not converged before the restart: ${ok.text}` };
      const before = placement(w.view());
      progress('plane off');
      await w.power('plane', false);
      await w.sleep(LIMITS.planeOffMs);
      const on = await w.power('plane', true);
      const assigns = (): FrameRecord[] =>
        w.records().filter((r) => r.t >= on.at && r.verdict === 'ok' && r.kind === 'assign');
      const r = await until(
        w,
        () => {
          const n = assigns().length;
          return n >= LIMITS.planeAssignments
            ? true
            : `${n}/${LIMITS.planeAssignments} assignments since power on`;
        },
        LIMITS.planeBackMs,
        progress,
      );
      const changed = changedSince(w, on.at, before);
      return {
        pass: r.ok && changed.length === 0,
        detail: `${r.ok ? `${assigns().length} assignments heard ${(r.ms / 1000).toFixed(1)} s after power on` : `the plane did not come back: ${r.text}`}; ${changed.length} changed`,
      };
    },
  },
];
