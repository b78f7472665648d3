// #31 item 5, runtime pod: what the plane refuses is in the OberonKube's status in the plane's own
// words. Everything the CRD lets through reaches the plane; what the plane still refuses of it is a
// full store — `a 250 Ticker; b 1 Ticker` needs 251 pods, 2 deployments, 2 replicasets and the
// nodes: more than the 256 objects it holds. The plane says so on the air (refusal frames), the
// operator hears it: Applied=False PlaneRefused and Degraded=True with the words, not Ready-and-
// silent. A new spec that fits clears it (level-triggered), and at rest nothing more is written.
// The test plays kubelet for the StatefulSets as oberonkube-e2e does: real emulated machines on a
// real UDP relay.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startRelay } from '../../operator/src/air/relay.ts';
import { OBERONKUBE } from '../../operator/src/controllers/oberonkube.ts';
import { resourcePath } from '../../operator/src/runtime/client.ts';
import { kubeDisk } from '../e2e/kube-harness.ts';
import { freshNamespace } from './harness.ts';
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

const WORDS = 'the plane refuses: the store is full (256 objects), nothing is created';

/**
 * An OberonKube of two nodes named `name` with `deployments`, its machines run here as processes
 * (the test plays kubelet), an operator scoped to its namespace and a local relay; `fn` gets the
 * client, the namespace and a way to read the resource (playing kubelet first).
 */
async function withCluster(
  name: string,
  deployments: string,
  fn: (c: {
    k: ReturnType<typeof testClient>;
    ns: string;
    get(): Promise<Deep>;
    patch(deployments: string): Promise<unknown>;
  }) => Promise<void>,
): Promise<void> {
  const ns = await freshNamespace(`kube-${name}`);
  const k = testClient();
  const disk = await kubeDisk();
  const work = mkdtempSync(join(tmpdir(), `rk-${name}-`));
  const relay = await startRelay({ port: 0, bind: '127.0.0.1' });
  const kubelet = new LocalKubelet(k, ns, { disk, relay: `127.0.0.1:${relay.address.port}`, work });
  try {
    await startOperator({
      namespace: ns,
      keySeed: name,
      airAddress: () => ({ host: '127.0.0.1', port: relay.address.port }),
    });
    await k.create(OBERONKUBE, {
      apiVersion: 'retrokube.io/v1alpha1',
      kind: 'OberonKube',
      metadata: { name, namespace: ns },
      spec: { nodes: 2, deployments },
    });
    await waitFor('the relay Service', () => k.getOrUndefined(CORE.service, ns, `rk-air-${name}-air`));
    await publishRelayEndpoint(k, ns, `${name}-air`);
    await fn({
      k,
      ns,
      get: async () => {
        await kubelet.sync();
        return k.get(OBERONKUBE, ns, name);
      },
      patch: (d) =>
        k.request('PATCH', resourcePath(OBERONKUBE, ns, name), {
          body: { spec: { deployments: d } },
          contentType: 'application/merge-patch+json',
        }),
    });
  } finally {
    kubelet.stop();
    await relay.close();
    rmSync(work, { recursive: true, force: true });
  }
}

describe('OberonKube: a refusal the plane says on the air is a condition (runtime pod)', () => {
  it('a full store: Applied=False PlaneRefused, Degraded=True in its words; a spec that fits clears both', async () => {
    await withCluster('full', 'a 250 Ticker; b 1 Ticker', async ({ k, ns, get, patch }) => {
      const refused: Deep = await waitFor(
        'Applied=False PlaneRefused heard on the air',
        async () => {
          const o: Deep = await get();
          return condition(o, 'Applied')?.reason === 'PlaneRefused' && o;
        },
        240_000,
      );
      expect(condition(refused, 'Applied')).toMatchObject({ status: 'False', message: WORDS });
      expect(condition(refused, 'Degraded')).toMatchObject({
        status: 'True',
        reason: 'PlaneRefused',
        message: WORDS,
      });
      const events = async (reason: string) =>
        (await k.list(CORE.event, ns)).items.filter(
          (e: Deep) => e.reason === reason && (e.regarding ?? e.involvedObject)?.name === 'full',
        );
      await waitFor('a PlaneRefused Event', async () => (await events('PlaneRefused')).length === 1);

      // A spec that fits: the plane scales down, the nodes find room in its store, and it stops
      // saying the refusal; status follows within the TTL, with no history kept.
      await patch('a 2 Ticker; b 1 Ticker');
      const fixed: Deep = await waitFor(
        'Applied: a 2 + b 1 heard running, Degraded False',
        async () => {
          const o: Deep = await get();
          return (
            condition(o, 'Applied')?.status === 'True' &&
            condition(o, 'Degraded')?.status === 'False' &&
            condition(o, 'Ready')?.status === 'True' &&
            o.status?.converged &&
            o
          );
        },
        180_000,
      );
      expect(condition(fixed, 'Applied')?.message).toBe('heard running Ticker ×3');
      expect(await events('PlaneAccepts')).toHaveLength(1);
      expect(await events('PlaneRefused')).toHaveLength(1);
      // At rest: not one status write.
      const atRest: Deep = await k.get(OBERONKUBE, ns, 'full');
      const until = Date.now() + 8_000;
      while (Date.now() < until) {
        await get();
        await new Promise((r) => setTimeout(r, 1000));
      }
      const later: Deep = await k.get(OBERONKUBE, ns, 'full');
      expect(later.metadata.resourceVersion).toBe(atRest.metadata.resourceVersion);
    });
  }, 480_000);

  it('a module no node has: the plane takes it, the kubelets say on the air they could not start it — Applied=False NodesCannotStart naming it; the right module clears it', async () => {
    await withCluster('typo', 'web 2 Tiker', async ({ get, patch }) => {
      const cannot: Deep = await waitFor(
        'Applied=False NodesCannotStart heard on the air',
        async () => {
          const o: Deep = await get();
          return condition(o, 'Applied')?.reason === 'NodesCannotStart' && o;
        },
        240_000,
      );
      const words =
        /^kubelet node-[ab] could not start Tiker \(pods? [0-9, ]+\).*: the node has no module of that name, or its Start refused or trapped$/;
      expect(condition(cannot, 'Applied')).toMatchObject({
        status: 'False',
        message: expect.stringMatching(words),
      });
      expect(condition(cannot, 'Degraded')).toMatchObject({
        status: 'True',
        reason: 'NodesCannotStart',
        message: expect.stringMatching(words),
      });
      await patch('web 2 Ticker');
      const fixed: Deep = await waitFor(
        'Applied: web 2 Ticker heard running, Degraded False',
        async () => {
          const o: Deep = await get();
          return (
            condition(o, 'Applied')?.status === 'True' && condition(o, 'Degraded')?.status === 'False' && o
          );
        },
        180_000,
      );
      expect(condition(fixed, 'Applied')?.message).toBe('heard running Ticker ×2');
    });
  }, 480_000);
});
