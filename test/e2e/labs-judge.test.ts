// The six labs judge themselves (issue #30 item 5): each lab of operator/src/console/labs.ts — the
// code the page runs — against a real emulated cluster broken on purpose, reached the way the page
// reaches `retrokube up`'s cluster: through the console's Oberon part (kube-part.ts: its actions,
// its passive listener, the records, view and state it pushes to a page). Each must say FAIL and
// name what broke. Lab 1 first passes on the mended cluster, so a FAIL is the break's, not the
// world's. Where a lab fails by its deadline (labs 1 and 3; lab 6 here, see there), the lab clock runs
// CLOCK× fast, so the deadlines come sooner; the air and the machines keep real time (the plane's
// 5 s off in lab 6 too: the lab sleeps in real time).
import { copyFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import type { ClusterView, FrameRecord } from '../../operator/src/air/view.ts';
import { type KubeTarget, kubePart } from '../../operator/src/console/kube-part.ts';
import { LABS, type LabResult, type LabWorld } from '../../operator/src/console/labs.ts';
import type { ConsolePart, PageSocket } from '../../operator/src/console/part.ts';
import type { ConsoleEvent, ConsoleState, Done, InjectReport } from '../../operator/src/console/types.ts';
import { KubeCluster, kubeDisk, sleep } from './kube-harness.ts';

const KEY = '0123456789abcdef';
const WRONG = 'fedcba9876543210';
const NODES = ['node-a', 'node-b'];
const CLOCK = 6;
const DEPLOYMENT = { name: 'web', replicas: 4, module: 'Ticker' };

const must = <T>(v: T | null, why: string): T => {
  if (v === null) throw new Error(why);
  return v;
};

/** A cluster as the console shows it to a page: the part's actions, and what it pushes to one page. */
class Console {
  state: ConsoleState | null = null;
  view: ClusterView | null = null;
  readonly records: FrameRecord[] = [];
  private readonly part: ConsolePart;
  private constructor(part: ConsolePart) {
    this.part = part;
  }

  static async open(c: KubeCluster): Promise<Console> {
    const target: KubeTarget = {
      name: 'labs',
      cluster: c.cluster,
      key: c.key,
      deployment: DEPLOYMENT,
      relay: c.relay,
      machines: () =>
        ['plane', ...NODES].map((name) => ({
          name,
          role: name === 'plane' ? 'plane' : 'node',
          on: c.machines.has(name),
          vnc: null,
        })),
      power: (name, on) => (on ? c.on(name) : c.off(name)),
      type: async (name, command) => c.run(name, command),
    };
    let k: Console | undefined;
    const page: PageSocket = { behind: () => false, send: (e) => k?.event(e) };
    const part = await kubePart(target, { all: () => [page], broadcast: (e) => page.send(e) }, false);
    k = new Console(part);
    for (const e of part.greet()) k.event(e);
    return k;
  }

  private event(e: ConsoleEvent): void {
    if (e.t === 'state') this.state = e.state;
    else if (e.t === 'view') this.view = e.view;
    else if (e.t === 'records') this.records.push(...e.records);
  }

  private act<T>(path: string, body: Record<string, unknown>): Promise<T> {
    return this.part.actions[path](body) as Promise<T>;
  }

  /** The page's LabWorld (main.ts), with `clock`× fast deadlines and `broken` replacing some actions. */
  world(clock = 1, broken: Partial<LabWorld> = {}): LabWorld {
    const t0 = performance.now();
    return {
      state: () => must(this.state, 'not connected to a cluster'),
      view: () => must(this.view, 'nothing heard yet'),
      records: () => this.records,
      power: (name, on) => this.act<Done>('/api/machine', { name, on }),
      air: (op) => this.act<Done>('/api/air', op),
      inject: (kind) => this.act<InjectReport>('/api/inject', { kind }),
      command: (command) => this.act<Done>('/api/command', { command }),
      sleep,
      now: () => t0 + (performance.now() - t0) * clock,
      ...broken,
    };
  }

  close(): Promise<void> {
    return this.part.close();
  }
}

const run = async (n: number, w: LabWorld): Promise<LabResult> => {
  const lab = LABS.find((l) => l.n === n);
  if (!lab) throw new Error(`no lab ${n}`);
  const r = await lab.run(w, () => {});
  console.log(`lab ${n} (${lab.title}): ${r.pass ? 'PASS' : 'FAIL'}: ${r.detail}`);
  return r;
};

describe.sequential('each lab says FAIL, and why, on a cluster broken on purpose', () => {
  let c: KubeCluster;
  let k: Console;
  afterAll(async () => {
    await k?.close();
    await c?.close();
  });

  /** The node running the most pods, as the console's view has it. */
  const busiest = (): string =>
    must(k.view, 'nothing heard yet')
      .nodes.filter((n) => n.ready)
      .reduce((a, b) => (b.running.length > a.running.length ? b : a)).name;

  /** Until the console's view shows the deployment running on both nodes again. */
  const mended = async (): Promise<void> => {
    const r = await run(1, k.world());
    expect(r.pass, r.detail).toBe(true);
    await c.wait(
      () => (k.view?.readyNodes ?? 0) === 2 && k.view?.converged === true,
      60_000,
      'both nodes Ready',
    );
  };

  it('1: nodes that joined with the wrong key: not formed', async () => {
    c = await KubeCluster.start({ nodes: NODES, key: KEY });
    c.run('plane', 'Kube.Apply web 4 Ticker');
    k = await Console.open(c);
    for (const n of NODES) {
      await c.off(n);
      await c.on(n, `KubeNet.Join ${n} kube ${WRONG}`);
    }
    // What the nodes said with the right key is forgotten after the node timeout.
    await c.wait(() => k.view?.readyNodes === 0, 30_000, 'no node Ready');
    const r = await run(1, k.world(CLOCK));
    expect(r.pass).toBe(false);
    expect(r.detail).toMatch(/^not formed: nodes Ready 0\/2/);
    // Mended: the nodes boot again with the cluster's key, and the same lab passes.
    for (const n of NODES) {
      await c.off(n);
      await c.on(n);
    }
    await mended();
  }, 360_000);

  it('2: a node dies as the rollout starts: fewer pods ran than wanted', async () => {
    // The busiest node is switched off as the command goes in: its pods drop out at the node
    // timeout, in the middle of the rollout. (Switched off after the typed command returned, a fast
    // rollout could be over before its pods dropped out; and node-b, switched off whatever it ran,
    // had no pod when lab 1's mending booted node-a first and the scheduler gave it all four: both
    // made lab 2 PASS in CI, rightly.)
    let victim = '';
    let lost = 0;
    const w = k.world(1, {
      command: async (command) => {
        victim = busiest();
        lost = must(k.view, 'nothing heard yet').nodes.find((n) => n.name === victim)?.running.length ?? 0;
        await c.off(victim);
        return k.world().command(command);
      },
    });
    const r = await run(2, w);
    expect(lost, `${victim} ran no pod when it was switched off`).toBeGreaterThan(0);
    expect(r.pass).toBe(false);
    const bounds = /pods running during the rollout (\d+)…(\d+) \(expected 4…5\)/.exec(r.detail);
    expect(bounds, r.detail).not.toBeNull();
    expect(Number(bounds?.[1])).toBeLessThan(4);
    await c.on(victim);
    await mended();
  }, 360_000);

  it('3: the plane dies with the node: no failover, and the node is not taken back', async () => {
    let victim = '';
    const r = await run(
      3,
      k.world(CLOCK, {
        power: async (name, on) => {
          if (!on) {
            victim = name;
            await c.off('plane');
          }
          return k.world().power(name, on);
        },
      }),
    );
    expect(r.pass).toBe(false);
    expect(r.detail).toMatch(new RegExp(`^no failover: (pods still on ${victim}|nodes Ready)`));
    expect(r.detail).toMatch(new RegExp(`${victim} did not come back`));
    await c.on('plane');
    await mended();
  }, 360_000);

  it('4: a node does not come back with the air: its assignments changed', async () => {
    let victim = '';
    const r = await run(
      4,
      k.world(1, {
        air: async (op) => {
          if (op.op === 'off') {
            victim = busiest();
            await c.off(victim);
          }
          return k.world().air(op);
        },
      }),
    );
    expect(r.pass).toBe(false);
    expect(r.detail).toMatch(/; [1-9]\d* changed assignments; placement CHANGED$/);
    await c.on(victim);
    await mended();
  }, 360_000);

  it("6: the plane's disk is lost while it is off: it does not come back as it was", async () => {
    // The plane from a blank disk seeds its counter anew, below the last one the air accepted from
    // the plane: its assignments are stale (the listener's verdict) until the counter catches up,
    // so after labs 1-4 the lab fails by its deadline (seen: 0/4 assignments in 120 s at CLOCK 1);
    // a plane heard within it would come back with changed assignments, also a FAIL.
    const r = await run(
      6,
      k.world(CLOCK, {
        power: async (name, on) => {
          if (name === 'plane' && on) copyFileSync(await kubeDisk(), c.diskOf('plane'));
          return k.world().power(name, on);
        },
      }),
    );
    expect(r.pass).toBe(false);
    expect(r.detail).toMatch(/; [1-9]\d* changed$|^the plane did not come back/);
  }, 360_000);

  it('5: a cluster with the all-zero key: the unsigned intruder is obeyed', async () => {
    await k.close();
    await c.close();
    const zero = '0000000000000000';
    c = await KubeCluster.start({ nodes: NODES, key: zero });
    c.run('plane', 'Kube.Apply web 4 Ticker');
    k = await Console.open(c);
    await mended();
    const r = await run(5, k.world());
    expect(r.pass).toBe(false);
    expect(r.detail).toMatch(/zero-key: \d+ heartbeats, OBEYED/);
  }, 480_000);
});
