// End to end, runtime pod: an OberonKube applied to a real API server converges for real. The
// test plays kubelet for the StatefulSets: it reads each Pod template and runs the same
// `retrokube machine run` command locally (the Kube disk as the PVC, the Secret's key for
// $(RK_KEY), the relay Service pointing at a local relay), and the OberonKube reports Ready with
// the node and pod counts the operator heard on the air.
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
  runExecProbe,
  startOperator,
  testClient,
  waitFor,
} from './operator-harness.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate API objects freely
type Deep = any;

describe('OberonKube end to end (runtime pod, the test plays kubelet)', () => {
  it('a plane and two nodes boot from the StatefulSets, join, run the deployment; status Ready 2/2 with 3/3 pods heard', async () => {
    const ns = await freshNamespace('kube-e2e');
    const k = testClient();
    const disk = await kubeDisk();
    const work = mkdtempSync(join(tmpdir(), 'rk-e2e-'));
    const relay = await startRelay({ port: 0, bind: '127.0.0.1' });
    const kubelet = new LocalKubelet(k, ns, { disk, relay: `127.0.0.1:${relay.address.port}`, work });
    const { procs, pods } = kubelet;
    try {
      const operatorOptions = {
        namespace: ns,
        keySeed: 'e2e',
        airAddress: () => ({ host: '127.0.0.1', port: relay.address.port }),
      };
      const first = await startOperator(operatorOptions);
      await k.create(OBERONKUBE, {
        apiVersion: 'retrokube.io/v1alpha1',
        kind: 'OberonKube',
        metadata: { name: 'e2e', namespace: ns },
        spec: { nodes: 2, deployments: 'web 3 Ticker' },
      });
      await waitFor('the key Secret', () => k.getOrUndefined(CORE.secret, ns, 'rk-kube-e2e-key'));
      // Machines start only once the relay Service has a ready endpoint (the endpointslice
      // controller's work, played here; the relay itself is the local one above).
      await waitFor('the relay Service', () => k.getOrUndefined(CORE.service, ns, 'rk-air-e2e-air'));
      await publishRelayEndpoint(k, ns, 'e2e-air');

      // The kubelet (every StatefulSet that appears gets its pod, run here as a process) is played by
      // kubelet.sync() below.
      const s: Deep = await waitFor(
        'the OberonKube Ready and converged as heard on the air',
        async () => {
          await kubelet.sync();
          const o: Deep = await k.get(OBERONKUBE, ns, 'e2e');
          return o.status?.converged && condition(o, 'Ready')?.status === 'True' && o;
        },
        240_000,
      );
      expect(procs.size).toBe(3);
      // Each machine's own readiness probe (run for real on its status file) says it booted, with
      // every module its boot commands name on the Kube disk: no trouble.
      for (const [name, p] of pods) {
        const r = runExecProbe(p.c, p.mounts);
        expect([name, r.ok, r.output]).toEqual([
          name,
          true,
          expect.stringMatching(/^booted: Oberon\.Loop reached at /),
        ]);
      }
      expect(s.status).toMatchObject({ nodes: '2/2', pods: '3/3', planeHeard: true, forgedFrames: 0 });
      const ids = s.status.nodeTable.flatMap((n: Deep) => n.running);
      expect(ids).toHaveLength(3);
      expect(s.status.nodeTable.flatMap((n: Deep) => n.images)).toEqual(['Ticker', 'Ticker', 'Ticker']);
      // #31.3: the plane has the deployments, heard running module by module.
      const applied = (o: Deep) => condition(o, 'Applied');
      const heard: Deep = await waitFor(
        'Applied: web 3 Ticker heard running',
        async () => {
          const o: Deep = await k.get(OBERONKUBE, ns, 'e2e');
          return applied(o)?.status === 'True' && o;
        },
        30_000,
      );
      expect(applied(heard)?.message).toBe('heard running Ticker ×3');

      // A new operator at rest (an upgrade, a new leader) hears the air anew: the status it finds
      // stands (not one write: no "0/2 nodes" while its station has heard nobody yet) and no Event
      // says again that the nodes joined.
      const nodeReadyEvents = async () =>
        (await k.list(CORE.event, ns)).items.filter((e: Deep) => e.reason === 'NodeReady').length;
      await waitFor('both nodes announced', async () => (await nodeReadyEvents()) >= 2);
      await new Promise((r) => setTimeout(r, 6000)); // the first operator's last writes are done
      const atRest: Deep = await k.get(OBERONKUBE, ns, 'e2e');
      const eventsBefore = await nodeReadyEvents();
      await first.stop();
      await startOperator(operatorOptions);
      const until = Date.now() + 20_000;
      while (Date.now() < until) {
        await kubelet.sync();
        const o: Deep = await k.get(OBERONKUBE, ns, 'e2e');
        expect([o.metadata.resourceVersion, o.status]).toEqual([
          atRest.metadata.resourceVersion,
          atRest.status,
        ]);
        await new Promise((r) => setTimeout(r, 500));
      }
      expect(await nodeReadyEvents()).toBe(eventsBefore);

      // A changed deployment reaches the running plane through its ConfigMap: a rolling update
      // heard on the air, the same plane process throughout.
      const planeProc = procs.get('rk-m-e2e-plane');
      await k.request('PATCH', resourcePath(OBERONKUBE, ns, 'e2e'), {
        body: { spec: { deployments: 'web 4 Ticker2' } },
        contentType: 'application/merge-patch+json',
      });
      // Applied only once the plane's pods are heard running the new list: never before (#31.3).
      const early: string[] = [];
      const rolled: Deep = await waitFor(
        'web 4 Ticker2 heard on the air, Applied',
        async () => {
          await kubelet.sync();
          const o: Deep = await k.get(OBERONKUBE, ns, 'e2e');
          const images = (o.status?.nodeTable ?? []).flatMap((n: Deep) => n.images ?? []);
          const all = images.length === 4 && images.every((i: string) => i === 'Ticker2');
          if (o.status?.observedGeneration === o.metadata.generation && applied(o)?.status === 'True' && !all)
            early.push(`${images.join(',')}: ${applied(o)?.message}`);
          return o.status?.converged && all && applied(o)?.status === 'True' && o;
        },
        120_000,
      );
      expect(early).toEqual([]);
      expect(applied(rolled)?.message).toBe('heard running Ticker2 ×4');
      expect(rolled.status).toMatchObject({ pods: '4/4' });
      expect(procs.get('rk-m-e2e-plane')).toBe(planeProc);
      expect(planeProc?.exitCode).toBeNull();
    } finally {
      kubelet.stop();
      await relay.close();
      rmSync(work, { recursive: true, force: true });
    }
  }, 420_000);
});
