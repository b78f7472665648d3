// On the several nodes: a Rollout over three OberonKubes spread on the workers: a manual canary
// aborted and heard rolled back, then a rolling walk whose operator pod is killed mid-way and
// resumes from status, no cluster changed twice.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  apply,
  type Chart,
  type Deep,
  freshNamespace,
  getJson,
  installChart,
  kubectl,
  pods,
  waitFor,
} from '../harness.ts';
import { cond, endGroup, LIMITS, nodeOf, WORKERS } from './common.ts';

/** Its describe block, registered inside the several-node file's (the cluster is up). */
export function rolloutOnNodes(): void {
  describe('a Rollout over three OberonKubes', () => {
    const CLUSTERS = ['c1', 'c2', 'c3'];
    let rns: string;
    let rchart: Chart | undefined;
    const kubeOf = (c: string) => getJson(['oberonkube', '-n', rns, c]);
    const rolloutOf = (name: string) => getJson(['rollouts.retrokube.io', '-n', rns, name]);
    /** Ready, converged, and both pods of web heard running `image`. */
    const runs = async (c: string, image: string): Promise<boolean> => {
      const o = await kubeOf(c);
      const images = (o.status?.nodeTable ?? []).flatMap((n: Deep) => n.images ?? []);
      return (
        cond(o, 'Ready') === 'True' &&
        o.status?.converged === true &&
        images.length === 2 &&
        images.every((i: string) => i === image)
      );
    };
    const allRun = async (image: string, clusters = CLUSTERS): Promise<boolean> =>
      (await Promise.all(clusters.map((c) => runs(c, image)))).every(Boolean);
    const rollout = (name: string, strategy: Record<string, unknown>) =>
      apply({
        apiVersion: 'retrokube.io/v1alpha1',
        kind: 'Rollout',
        metadata: { name, namespace: rns },
        spec: {
          selector: { matchLabels: { fleet: 'demo' } },
          change: { deployment: 'web', image: 'Ticker2' },
          strategy: { ...strategy, checkSeconds: 5, stepDeadlineSeconds: 300 },
          check: { minRunning: 1 },
        },
      });
    const settledAs = (name: string, phases: string[]) =>
      waitFor(
        `rollout ${name} ${phases.join(' or ')}`,
        async () => {
          const r = await rolloutOf(name);
          return phases.includes(r.status?.phase) && r;
        },
        LIMITS.recoverMs,
      );
    /** How many Events of `reason` the rollout `name` has per target (the note starts with its name). */
    const eventsPerTarget = async (name: string, reason: string): Promise<Record<string, number>> => {
      const out: Record<string, number> = {};
      for (const e of (await getJson(['events.events.k8s.io', '-n', rns])).items as Deep[]) {
        if (e.regarding?.name !== name || e.reason !== reason) continue;
        const target = String(e.note).split(':')[0];
        out[target] = (out[target] ?? 0) + (e.series?.count ?? 1);
      }
      return out;
    };

    beforeAll(async () => {
      rns = await freshNamespace('nodes-rollout');
      rchart = await installChart(rns, `rk-${rns.split('-').pop()}`);
      for (const c of CLUSTERS)
        await apply({
          apiVersion: 'retrokube.io/v1alpha1',
          kind: 'OberonKube',
          metadata: { name: c, namespace: rns, labels: { fleet: 'demo' } },
          spec: { nodes: 1, runtime: 'pod', deployments: 'web 2 Ticker' },
        });
      await waitFor('three clusters Ready, web 2 Ticker heard', () => allRun('Ticker'), LIMITS.convergeMs);
      // Each plane apart from its node: six machines over the three hosts.
      const hosts = new Set((await pods(rns, 'app.kubernetes.io/name=retrokube-machine')).map(nodeOf));
      expect(hosts.size).toBe(WORKERS);
    }, LIMITS.upMs + LIMITS.convergeMs);
    afterAll(() => endGroup(rchart, rns), LIMITS.upMs);

    it(
      'canary with manual promotion: one cluster changed and waiting; aborted, it is heard back on its old module, the others untouched',
      async () => {
        await rollout('canary', { type: 'canary', canary: { count: 1, promotion: 'manual' } });
        const waiting = await settledAs('canary', ['WaitingForPromotion', 'Failed']);
        expect(waiting.status.phase, waiting.status.message).toBe('WaitingForPromotion');
        const [first, ...rest] = waiting.status.targets as Deep[];
        expect([first.phase, rest.map((t: Deep) => t.phase)]).toEqual(['Succeeded', ['Pending', 'Pending']]);
        expect(await allRun('Ticker2', [first.name])).toBe(true);
        expect(
          await allRun(
            'Ticker',
            rest.map((t: Deep) => t.name),
          ),
        ).toBe(true);
        await kubectl([
          'patch',
          'rollouts.retrokube.io',
          'canary',
          '-n',
          rns,
          '--type=merge',
          '-p',
          '{"spec":{"abort":true}}',
        ]);
        const aborted = await waitFor(
          'the canary rolled back',
          async () => {
            const r = await rolloutOf('canary');
            return r.status?.phase === 'Aborted' && r.status.targets[0].phase === 'RolledBack' && r;
          },
          LIMITS.recoverMs,
        );
        expect(aborted.status.targets.map((t: Deep) => t.phase)).toEqual([
          'RolledBack',
          'Skipped',
          'Skipped',
        ]);
        await waitFor('every cluster heard on Ticker again', () => allRun('Ticker'), LIMITS.recoverMs);
        for (const c of CLUSTERS) expect((await kubeOf(c)).spec.deployments).toBe('web 2 Ticker');
        expect(await eventsPerTarget('canary', 'Updating')).toEqual({ [first.name]: 1 });
      },
      3 * LIMITS.recoverMs,
    );

    it(
      'rolling, the operator pod killed after the first cluster: the new leader resumes from status, every cluster changed once',
      async () => {
        await rollout('ticker2', { type: 'rolling', maxParallel: 1 });
        const first = await waitFor(
          'the first cluster changed',
          async () => {
            const r = await rolloutOf('ticker2');
            return r.status?.targets?.[0]?.phase === 'Succeeded' && r;
          },
          LIMITS.recoverMs,
        );
        expect(first.status.targets[1].phase).not.toBe('Succeeded');
        await kubectl(['delete', 'pod', '-n', rns, '-l', 'app.kubernetes.io/name=retrokube', '--wait=false']);
        const done = await settledAs('ticker2', ['Succeeded', 'Failed', 'Aborted']);
        expect([done.status.phase, done.status.message]).toEqual(['Succeeded', '3 of 3 targets changed']);
        expect(done.status.targets.map((t: Deep) => [t.name, t.phase, t.attempts, t.previous])).toEqual(
          CLUSTERS.map((c) => [c, 'Succeeded', 1, { image: 'Ticker', replicas: 2 }]),
        );
        const rows = done.status.targets as Deep[];
        for (let i = 1; i < rows.length; i++)
          expect(Date.parse(rows[i].startedAt)).toBeGreaterThanOrEqual(Date.parse(rows[i - 1].finishedAt));
        await waitFor('every cluster heard running Ticker2', () => allRun('Ticker2'), LIMITS.recoverMs);
        expect(await eventsPerTarget('ticker2', 'Updating')).toEqual({ c1: 1, c2: 1, c3: 1 });
      },
      3 * LIMITS.recoverMs,
    );
  });
}
