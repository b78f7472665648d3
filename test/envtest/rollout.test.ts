// A Rollout walks a version change over three real Oberon clusters (the test plays kubelet: every
// machine is a real `retrokube machine run` process on one local relay), judged from what the
// operator hears on the air. The operator is stopped mid-way and a new one resumes from the
// Rollout's status alone, without touching a target twice. Bad input changes nothing.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startRelay } from '../../operator/src/air/relay.ts';
import { OBERONKUBE } from '../../operator/src/controllers/oberonkube.ts';
import { ROLLOUT } from '../../operator/src/controllers/rollout.ts';
import { ApiError } from '../../operator/src/runtime/client.ts';
import { kubeDisk } from '../e2e/kube-harness.ts';
import { REPO_ROOT } from './control-plane.ts';
import { freshNamespace, kubeconfigPath } from './harness.ts';
import {
  CORE,
  condition,
  LocalKubelet,
  publishRelayEndpoint,
  startOperator,
  testClient,
  waitFor,
} from './operator-harness.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate API objects freely
type Deep = any;

const CLUSTERS = ['c1', 'c2', 'c3'];

const rollout = (ns: string, name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'retrokube.io/v1alpha1',
  kind: 'Rollout',
  metadata: { name, namespace: ns },
  spec,
});

describe('Rollout over OberonKubes (the test plays kubelet; judged from the air)', () => {
  it('a rolling change reaches every cluster one at a time; an operator restarted mid-way resumes from status and changes no target twice', async () => {
    const ns = await freshNamespace('rollout');
    const k = testClient();
    const disk = await kubeDisk();
    const work = mkdtempSync(join(tmpdir(), 'rk-rollout-'));
    const relay = await startRelay({ port: 0, bind: '127.0.0.1' });
    const kubelet = new LocalKubelet(k, ns, { disk, relay: `127.0.0.1:${relay.address.port}`, work });
    const operator = () =>
      startOperator({
        namespace: ns,
        keySeed: 'rollout',
        airAddress: () => ({ host: '127.0.0.1', port: relay.address.port }),
      });
    try {
      let mgr = await operator();
      for (const [i, c] of CLUSTERS.entries()) {
        await k.create(OBERONKUBE, {
          apiVersion: 'retrokube.io/v1alpha1',
          kind: 'OberonKube',
          metadata: { name: c, namespace: ns, labels: { fleet: 'demo', tier: ['db', 'api', 'web'][i] } },
          // One air (the local relay) for all three: each cluster has its own name and key.
          spec: { nodes: 1, cluster: c, deployments: 'web 2 Ticker' },
        });
        await waitFor(`the relay Service of ${c}`, () =>
          k.getOrUndefined(CORE.service, ns, `rk-air-${c}-air`),
        );
        await publishRelayEndpoint(k, ns, `${c}-air`);
      }
      const allReady = async (image: string) => {
        await kubelet.sync();
        for (const c of CLUSTERS) {
          const o: Deep = await k.get(OBERONKUBE, ns, c);
          const images = (o.status?.nodeTable ?? []).flatMap((n: Deep) => n.images ?? []);
          if (!(o.status?.converged && condition(o, 'Ready')?.status === 'True')) return false;
          if (images.length !== 2 || images.some((i: string) => i !== image)) return false;
        }
        return true;
      };
      await waitFor('three clusters Ready with web 2 Ticker heard', () => allReady('Ticker'), 300_000);

      // Refused by the schema: a canary without its numbers.
      const refused = await k
        .create(
          ROLLOUT,
          rollout(ns, 'bad', {
            selector: { matchLabels: { fleet: 'demo' } },
            change: { deployment: 'web', image: 'Ticker2' },
            strategy: { type: 'canary' },
          }),
        )
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ApiError);
      expect((refused as ApiError).message).toMatch(
        /spec\.strategy\.canary: .*strategy canary needs canary\.count or canary\.percent/,
      );

      // Refused in status before anything is touched: no target, a deployment the targets lack.
      await k.create(
        ROLLOUT,
        rollout(ns, 'nothing', {
          selector: { matchLabels: { fleet: 'none' } },
          change: { deployment: 'web', image: 'Ticker2' },
          strategy: { type: 'rolling' },
        }),
      );
      await k.create(
        ROLLOUT,
        rollout(ns, 'ghost', {
          selector: { matchLabels: { fleet: 'demo' } },
          change: { deployment: 'api', image: 'Ticker2' },
          strategy: { type: 'rolling' },
        }),
      );
      const nothing: Deep = await waitFor(
        'nothing refused',
        async () =>
          ((await k.get(ROLLOUT, ns, 'nothing')) as Deep).status?.phase === 'Failed' &&
          k.get(ROLLOUT, ns, 'nothing'),
      );
      expect(nothing.status.message).toMatch(/the selector matches no target/);
      const ghost: Deep = await waitFor(
        'ghost refused',
        async () =>
          ((await k.get(ROLLOUT, ns, 'ghost')) as Deep).status?.phase === 'Failed' &&
          k.get(ROLLOUT, ns, 'ghost'),
      );
      expect(ghost.status.message).toMatch(/deployment api does not exist on c1, c2, c3/);

      // The walk, in tier order, one at a time.
      await k.create(
        ROLLOUT,
        rollout(ns, 'ticker2', {
          selector: { matchLabels: { fleet: 'demo' } },
          change: { deployment: 'web', image: 'Ticker2' },
          strategy: {
            type: 'ordered',
            ordered: { label: 'tier', order: ['db', 'api', 'web'] },
            checkSeconds: 2,
            stepDeadlineSeconds: 180,
          },
          check: { minRunning: 1 },
        }),
      );
      await waitFor(
        'the first target done',
        async () => {
          await kubelet.sync();
          const r: Deep = await k.get(ROLLOUT, ns, 'ticker2');
          return r.status?.targets?.[0]?.phase === 'Succeeded';
        },
        240_000,
      );
      // A new operator takes over from the status the old one left.
      await mgr.stop();
      const mid: Deep = await k.get(ROLLOUT, ns, 'ticker2');
      expect(mid.status.targets.map((t: Deep) => t.name)).toEqual(['c1', 'c2', 'c3']);
      mgr = await operator();
      const done: Deep = await waitFor(
        'the rollout Succeeded',
        async () => {
          await kubelet.sync();
          const r: Deep = await k.get(ROLLOUT, ns, 'ticker2');
          return ['Succeeded', 'Failed'].includes(r.status?.phase) && r;
        },
        420_000,
      );
      expect([done.status.phase, done.status.message]).toEqual(['Succeeded', '3 of 3 targets changed']);
      expect(done.status.progress).toBe('3/3');
      expect(done.status.targets.map((t: Deep) => [t.name, t.phase, t.attempts, t.previous])).toEqual(
        CLUSTERS.map((c) => [c, 'Succeeded', 1, { image: 'Ticker', replicas: 2 }]),
      );
      // Never two targets at once: each started after the one before it finished.
      const rows = done.status.targets;
      for (let i = 1; i < rows.length; i++)
        expect(Date.parse(rows[i].startedAt)).toBeGreaterThanOrEqual(Date.parse(rows[i - 1].finishedAt));
      for (const c of CLUSTERS)
        expect(((await k.get(OBERONKUBE, ns, c)) as Deep).spec.deployments).toBe('web 2 Ticker2');
      await waitFor('every cluster heard running Ticker2', () => allReady('Ticker2'), 120_000);
      // The CLI reads the walk and steers by fields.
      const cli = (...args: string[]) =>
        execFileSync(
          join(REPO_ROOT, 'node_modules/.bin/node'),
          [
            join(REPO_ROOT, 'operator/src/cli/main.ts'),
            'rollout',
            ...args,
            '-n',
            ns,
            '--kubeconfig',
            kubeconfigPath(),
          ],
          { encoding: 'utf8' },
        );
      const table = cli('status', 'ticker2');
      expect(table).toMatch(/\[#{20}\] 3\/3 changed {2}Succeeded/);
      expect(table).toMatch(/^c2 +Succeeded +1 +\d+s ago +runs Ticker2 ×2$/m);
      expect(JSON.parse(cli('status', 'ticker2', '-o', 'json')).progress).toBe('3/3');
      expect(cli('pause', 'nothing')).toBe(`rollout nothing (namespace ${ns}): paused\n`);
      expect(((await k.get(ROLLOUT, ns, 'nothing')) as Deep).spec.paused).toBe(true);
      // The refused rollouts touched nothing (the change above is the only one).
      const reasons = ((await k.list(CORE.event, ns)).items as Deep[])
        .filter((e) => e.regarding?.name === 'ticker2')
        .map((e) => e.reason);
      expect(reasons).toEqual(expect.arrayContaining(['Started', 'Updating', 'Converged', 'Succeeded']));
    } finally {
      kubelet.stop();
      await relay.close();
      rmSync(work, { recursive: true, force: true });
    }
  }, 900_000);
});
