// A SheetCluster whose status comes from a real Sheeternetes apiserver process with three real node
// agents — the operator's rendered pods run here as local processes (sheetcluster-kit.ts plays the
// kubelet: their own args, env from the generated Secrets). Proves: Ready from the sheet, the wasm
// deployments run and the process sample does not (no node offers it), the ownership rule of
// spec.deployments, zero writes at steady state, node loss and return as Events, an apiserver that
// stops answering (Degraded) and comes back with every acknowledged write on its "PVC".
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { SHEETCLUSTER } from '../../operator/src/controllers/sheetcluster.ts';
import type { LocalProcess } from '../../operator/src/local/pods.ts';
import { SheetsClient } from '../../operator/src/sheets/ctl/client.ts';
import { freshNamespace } from './harness.ts';
import { CORE, condition, startOperator, testClient, waitFor } from './operator-harness.ts';
import { kubeletWarning, runAgentPod, runApiserverPod, sheetCluster } from './sheetcluster-kit.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate API objects freely
type Deep = any;

const CORE_V1_EVENT = {
  group: '',
  version: 'v1',
  plural: 'events',
  kind: 'Event',
  namespaced: true,
} as const;

describe('SheetCluster status from a real apiserver and real agents', () => {
  it('Ready from the sheet; spec.deployments owned field by field; node loss/return Events; apiserver restart keeps writes', async () => {
    const ns = await freshNamespace('sheet-live');
    const k = testClient();
    let url = 'http://127.0.0.1:9';
    await startOperator({
      namespace: ns,
      keySeed: 'envtest-live-seed',
      sheetsAddress: () => url,
      sheetTiming: { pollMs: 1_000, startGraceMs: 1_000 },
    });
    await k.create(
      SHEETCLUSTER,
      sheetCluster(ns, 'live', {
        nodes: 3,
        failoverSeconds: 10, // heartbeats every 3 s: a loaded CI machine does not starve a node past it
        // The sample "hello" (wasm, runs once) gets 2 replicas from the spec; "tick" is the spec's own;
        // "shell" needs the process runtime, which no node offers (runtimes defaults to wasm).
        deployments: [
          { name: 'hello', replicas: 2 },
          { name: 'tick', image: 'sicf:hello-wasm:v1', replicas: 1, cpu_req: 10, mem_req: 8 },
          { name: 'shell', image: 'process', command: 'sleep 100', replicas: 1, cpu_req: 10, mem_req: 8 },
        ],
      }),
    );
    await waitFor('apiserver Deployment and agents', async () => {
      const d = await k.getOrUndefined(CORE.deployment, ns, 'rk-sheets-live');
      const s = await k.getOrUndefined(CORE.secret, ns, 'rk-sheets-live-signing');
      return !!d && !!s;
    });
    // The PV controller binds the workbook's claim (the test API server runs none: we write its status);
    // the folder below is that volume.
    await k.request(
      'PATCH',
      `/api/v1/namespaces/${ns}/persistentvolumeclaims/rk-sheets-live-workbook/status`,
      {
        body: { status: { phase: 'Bound' } },
        contentType: 'application/merge-patch+json',
      },
    );
    const data = mkdtempSync(join(tmpdir(), 'rk-sheet-pvc-'));
    const pods: LocalProcess[] = [];
    onTestFinished(async () => {
      await Promise.all(pods.map((p) => p.stop('SIGKILL')));
    });
    let api = await runApiserverPod(k, ns, 'live', data);
    pods.push(api.pod);
    url = api.url;
    const agents: LocalProcess[] = [];
    for (let i = 0; i < 3; i++) {
      agents[i] = await runAgentPod(k, ns, 'live', i, url);
      pods.push(agents[i]);
    }
    const tok = await k.get<Deep>(CORE.secret, ns, 'rk-sheets-live-token');
    const sig = await k.get<Deep>(CORE.secret, ns, 'rk-sheets-live-signing');
    const token = Buffer.from(tok.data.token, 'base64').toString();
    const key = Buffer.from(sig.data.key, 'base64').toString();
    const person = () => new SheetsClient({ url, token, key }); // someone with skctl and the Secrets
    const sc = () => k.get<Deep>(SHEETCLUSTER, ns, 'live');

    // Ready from the sheet: 3/3 nodes, the wasm pods run; the process sample waits (no node offers it).
    const ready = await waitFor(
      'Ready with 3/3 nodes and the wasm pods started',
      async () => {
        const o = await sc();
        return condition(o, 'Ready')?.status === 'True' &&
          o.status.nodes === '3/3' &&
          o.status.runningPods === 5
          ? o
          : undefined;
      },
      90_000,
    );
    expect(ready.status.desiredPods).toBe(6); // hello 2 + the sample ticker 2 + tick 1 + shell 1
    expect(ready.status.pods).toBe('5/6');
    // The process sample no agent here can run: Degraded says which pod and the agent's reason.
    expect(condition(ready, 'Degraded')).toMatchObject({
      status: 'True',
      reason: 'PodsCannotStart',
      message: expect.stringMatching(/^the node agents cannot start: \S+: .*process/),
    });
    expect(ready.status.nodeTable.map((n: Deep) => n.name)).toEqual(['node-0', 'node-1', 'node-2']);
    const sheetPods = await person().get('pods');
    const shell = sheetPods.filter((p) => p.deployment === 'shell');
    expect(shell).toHaveLength(1);
    expect(shell[0].phase).not.toBe('Running'); // no node runs commands from cells unless the spec says so
    expect(String(shell[0].message)).toMatch(/process runtime/);
    const rows = await person().get('deployments');
    expect(rows.find((r) => r.name === 'hello')?.replicas).toBe(2);
    expect(rows.find((r) => r.name === 'tick')?.image).toBe('sicf:hello-wasm:v1');

    // Ownership: the spec owns the fields it sets (a cell edit of one is put back), the sheet the rest.
    await person().post({ action: 'scale', name: 'hello', replicas: 4 });
    await person().post({ action: 'apply', deployments: [{ name: 'hello', env: 'GREETING=hi' }] });
    await waitFor(
      'hello replicas put back to 2',
      async () => (await person().get('deployments')).find((r) => r.name === 'hello')?.replicas === 2,
      30_000,
    );
    await new Promise((r) => setTimeout(r, 3_000));
    const after = (await person().get('deployments')).find((r) => r.name === 'hello');
    expect(after?.replicas).toBe(2);
    expect(after?.env).toBe('GREETING=hi'); // not in the spec: the person's edit stands
    await waitFor('a DeploymentRestored Event', async () => {
      const evs = await k.list<Deep>(CORE_V1_EVENT, ns);
      return evs.items.some(
        (e: Deep) => e.reason === 'DeploymentRestored' && /replicas of deployment hello/.test(e.message),
      );
    });

    // Steady state: no writes to the SheetCluster while nothing changes in the sheet.
    await waitFor(
      'status settled (5/6 again)',
      async () => (await sc()).status.pods === '5/6' && (await sc()).status.runningPods === 5,
      60_000,
    );
    // The Metrics tab is sampled every 15 s; its newest sample is in status.
    const withMetrics = await waitFor(
      'metrics from the sheet',
      async () => (await sc()).status.metrics,
      40_000,
    );
    expect(withMetrics.cpuCapacityMillicores).toBe(3000);
    expect(withMetrics.cpuAllocatedMillicores).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 6_000)); // past the status rate limit
    const rv = (await sc()).metadata.resourceVersion;
    await new Promise((r) => setTimeout(r, 12_000));
    expect((await sc()).metadata.resourceVersion).toBe(rv);

    // A readiness probe failing for the first seconds of a pod's start (the kubelet's Warning) is
    // a normal start, not a pod that cannot start: no PodCannotStart (conditions describe now).
    await kubeletWarning(k, ns, {
      name: 'rk-sheets-live-probe.unhealthy',
      pod: 'rk-sheets-live-5c4d7-ab12c',
      reason: 'Unhealthy',
      message: 'Readiness probe failed: Get "http://10.0.0.5:8787/healthz": connection refused',
      count: 2,
    });
    await new Promise((r) => setTimeout(r, 8_000));
    expect(condition(await sc(), 'Degraded')?.reason).toBe('PodsCannotStart'); // the process sample, as before

    // Node loss: node-2's agent dies; after the TTL the sheet says NotReady → Degraded and an Event.
    await agents[2].stop('SIGKILL');
    const lost = await waitFor(
      'node-2 NotReady',
      async () => {
        const o = await sc();
        return condition(o, 'Degraded')?.reason === 'NodesNotReady' ? o : undefined;
      },
      60_000,
    );
    expect(lost.status.nodes).toBe('2/3');
    expect(condition(lost, 'Ready')?.status).toBe('False');
    expect(condition(lost, 'Degraded')?.message).toMatch(/node-2/);
    expect(lost.status.lastWarning).toMatch(/Node\/node-2: NotReady/);
    // The agent's pod comes back under the same name (its StatefulSet index) and rejoins.
    agents[2] = await runAgentPod(k, ns, 'live', 2, url);
    pods.push(agents[2]);
    await waitFor('Ready again', async () => condition(await sc(), 'Ready')?.status === 'True', 60_000);
    // ... and the warning goes with what it said: lastWarning describes now, not history.
    await waitFor(
      'no lastWarning about node-2 once it is Ready',
      async () => !/Node\/node-2: NotReady/.test((await sc()).status.lastWarning ?? ''),
      30_000,
    );
    const evs = (await k.list<Deep>(CORE_V1_EVENT, ns)).items;
    expect(
      evs.some((e: Deep) => e.reason === 'NodeLost' && /node-2/.test(e.message) && e.type === 'Warning'),
    ).toBe(true);
    expect(evs.some((e: Deep) => e.reason === 'NodeReturned' && /node-2/.test(e.message))).toBe(true);

    // The apiserver stops answering → Degraded; a new one on the same PVC keeps every acknowledged write.
    await api.pod.stop('SIGKILL');
    const down = await waitFor(
      'Degraded ApiserverNotAnswering',
      async () => {
        const o = await sc();
        return condition(o, 'Degraded')?.reason === 'ApiserverNotAnswering' ? o : undefined;
      },
      30_000,
    );
    expect(condition(down, 'Ready')?.status).toBe('False');
    api = await runApiserverPod(k, ns, 'live', data);
    pods.push(api.pod);
    url = api.url;
    const back = (await person().get('deployments')).find((r) => r.name === 'hello');
    expect(back).toMatchObject({ replicas: 2, env: 'GREETING=hi' });
    // The agents still point at the old address (a Service would not change): restart them on the new one.
    for (let i = 0; i < 3; i++) {
      await agents[i].stop('SIGKILL');
      agents[i] = await runAgentPod(k, ns, 'live', i, url);
      pods.push(agents[i]);
    }
    await waitFor(
      'Ready after the apiserver restart',
      async () => {
        const o = await sc();
        if (condition(o, 'Ready')?.status === 'True') return true;
        throw new Error(JSON.stringify(o.status));
      },
      60_000,
    );

    // The generated secrets are nowhere in status or Events.
    const all = JSON.stringify([(await sc()).status, (await k.list<Deep>(CORE_V1_EVENT, ns)).items]);
    expect(all).not.toContain(token);
    expect(all).not.toContain(key);
  });
});
