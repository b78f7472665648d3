// The emulator's own word reaches OberonMachine status without any new privilege: the machine pod
// runs `retrokube machine run --status-file`, its readiness probe prints that file's first line,
// and the kubelet's `Unhealthy` event ("Readiness probe failed: <the emulator's words>") is read
// by the operator like every other event of the pod. The test plays kubelet for real: it runs the
// pod's command locally (volumes as local folders, a local relay), runs the pod's own probe
// command against the emulator's status file, and writes the event as the kubelet would.
import { type ChildProcess, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startRelay } from '../../operator/src/air/relay.ts';
import { KINDS_OWNED, OBERONMACHINE } from '../../operator/src/controllers/oberonmachine.ts';
import { BASE_IMAGE } from '../../operator/src/machine/test-disk.ts';
import { type KubeClient, resourcePath } from '../../operator/src/runtime/client.ts';
import { freshNamespace } from './harness.ts';
import {
  localMachineArgs,
  oberonMachine,
  ProbeEvents,
  publishRelayEndpoint,
  quiescent,
  runExecProbe,
  startOperator,
  testClient,
  waitFor,
} from './operator-harness.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate API objects freely
type Deep = any;

const statusOf = async (k: KubeClient, ns: string, name: string): Promise<Deep> =>
  ((await k.get(OBERONMACHINE, ns, name)) as Deep).status ?? {};

/** The StatefulSet controller's part once the kubelet reports the pod ready (or not). */
async function setReady(k: KubeClient, ns: string, sts: Deep, ready: boolean): Promise<void> {
  await k.request('PATCH', resourcePath(KINDS_OWNED.statefulSet, ns, sts.metadata.name, 'status'), {
    body: {
      status: {
        replicas: 1,
        readyReplicas: ready ? 1 : 0,
        availableReplicas: ready ? 1 : 0,
        currentReplicas: 1,
        updatedReplicas: 1,
        observedGeneration: sts.metadata.generation,
      },
    },
    contentType: 'application/merge-patch+json',
  });
}

describe("OberonMachine status carries the emulator's own words (runtime pod, the test plays kubelet)", () => {
  it('a node machine on a disk without the Kube modules is not ready and says why in status.events and status.message; a standalone one becomes Running on its "booted" probe; steady state writes nothing', async () => {
    const ns = await freshNamespace('m-emulator');
    const k = testClient();
    const root = resolve(import.meta.dirname, '../..');
    const work = mkdtempSync(join(tmpdir(), 'rk-emu-'));
    const relay = await startRelay({ port: 0, bind: '127.0.0.1' });
    const procs = new Map<string, { proc: ChildProcess; mounts: Record<string, string>; sts: Deep }>();
    const events = new ProbeEvents(k, ns);
    try {
      const mgr = await startOperator({ namespace: ns });
      await publishRelayEndpoint(k, ns, 'lab');
      await k.create(OBERONMACHINE, oberonMachine(ns, 'n1', { air: 'lab', role: 'node', nodeName: 'a' }));
      await k.create(OBERONMACHINE, oberonMachine(ns, 's1', { role: 'standalone' }));

      // The kubelet starts each pod: the base Oberon image as the PVC (no Kube modules on it).
      for (const name of ['rk-m-n1', 'rk-m-s1']) {
        const sts: Deep = await waitFor(`the StatefulSet ${name} with a replica`, async () => {
          const o: Deep = await k.getOrUndefined(KINDS_OWNED.statefulSet, ns, name);
          return o?.spec.replicas === 1 && o;
        });
        const c = sts.spec.template.spec.containers[0];
        const mounts = { disk: join(work, name, 'disk'), status: join(work, name, 'status') };
        for (const dir of Object.values(mounts)) mkdirSync(dir, { recursive: true });
        copyFileSync(BASE_IMAGE, join(mounts.disk, 'oberon.dsk'));
        const args = localMachineArgs(c, { mounts, relay: `127.0.0.1:${relay.address.port}` });
        expect(args).toContain(join(mounts.status, 'status'));
        const proc = spawn(resolve(root, 'node_modules/.bin/node'), ['operator/src/cli/main.ts', ...args], {
          cwd: root,
          stdio: 'ignore',
        });
        procs.set(name, { proc, mounts, sts });
      }
      // The kubelet probes each container after its initial delay, then every period (compressed
      // here to 0.5 s): a failure is an Unhealthy event, a success makes the pod ready.
      const delayMs = procs.get('rk-m-n1')?.sts.spec.template.spec.containers[0].readinessProbe
        .initialDelaySeconds as number;
      expect(delayMs).toBeGreaterThan(0);
      await new Promise((r) => setTimeout(r, delayMs * 1000));
      const seen = new Map<string, string[]>();
      const ready = new Set<string>();
      const probeAll = async () => {
        for (const [name, p] of procs) {
          const c = p.sts.spec.template.spec.containers[0];
          const r = runExecProbe(c, p.mounts);
          seen.set(name, [...(seen.get(name) ?? []), r.output]);
          if (!r.ok) await events.failed(`${name}-0`, c.name, r.output);
          if (r.ok !== ready.has(name)) {
            await setReady(k, ns, p.sts, r.ok);
            if (r.ok) ready.add(name);
            else ready.delete(name);
          }
        }
      };

      // On a busy host the emulator may not have written its status file by the first probe: n1
      // then also has a "starting:" (or "booting:") line, an older one. Its newest line is the trouble
      // once the trouble's own time has moved past it (event times have whole seconds).
      const words =
        'trouble: the disk has no Boot.rsc, KubeNet.rsc (named by the boot commands); seed it with `retrokube disk build-kube`';
      const troubled: Deep = await waitFor(
        "n1's trouble as the newest line of its status",
        async () => {
          await probeAll();
          const s = await statusOf(k, ns, 'n1');
          if (s.events?.[0]?.message === `Readiness probe failed: ${words}`) return s;
          throw new Error(`status.events is ${JSON.stringify(s.events ?? [])}`);
        },
        60_000,
      );
      expect(troubled.events[0]).toMatchObject({
        object: 'Pod/rk-m-n1-0',
        type: 'Warning',
        reason: 'Unhealthy',
        message: `Readiness probe failed: ${words}`,
      });
      expect(troubled.phase).toBe('Starting');
      expect(troubled.ready).toBe(false);
      expect(troubled.message).toBe(`Pod/rk-m-n1-0 Unhealthy: Readiness probe failed: ${words}`);
      expect(seen.get('rk-m-n1')?.at(-1)).toBe(`${words}\n`); // the probe printed the emulator's line
      const beforeTrouble = (s: Deep): Deep[] =>
        s.events.filter((e: Deep) => e.reason === 'Unhealthy' && !e.message.endsWith(words));
      for (const e of beforeTrouble(troubled))
        expect(e.message).toMatch(/^Readiness probe failed: (booting|starting): /);

      const running: Deep = await waitFor(
        's1 Running on its booted probe',
        async () => {
          await probeAll();
          const s = await statusOf(k, ns, 's1');
          return s.phase === 'Running' && s;
        },
        60_000,
      );
      expect(seen.get('rk-m-s1')?.at(-1)).toMatch(
        /^booted: Oberon\.Loop reached at \S+Z after \d+\.\d M instructions/,
      );
      // A booted emulator's probe leaves no event; only a slow boot (a busy host) may have left
      // "booting" words before it.
      for (const e of running.events.filter((e: Deep) => e.reason === 'Unhealthy'))
        expect(e.message).toMatch(/^Readiness probe failed: (booting|starting): /);

      // n1 keeps failing with the same words: the kubelet counts one event up, and the operator
      // writes the count on the one trouble line (at most once per interval, proven in
      // oberonmachine-world.test.ts, so the deadline is several intervals).
      await probeAll();
      const count = events.countOf('rk-m-n1-0', `${words}\n`);
      expect(count).toBeGreaterThan(1);
      const counted: Deep = await waitFor(
        "n1's event count in status",
        async () => {
          const n1 = await statusOf(k, ns, 'n1');
          const trouble = n1.events.filter((e: Deep) => e.message === `Readiness probe failed: ${words}`);
          if (trouble.length === 1 && trouble[0].count === count) return n1;
          throw new Error(
            `waiting for one trouble line with count ${count}; status.events is ${JSON.stringify(n1.events)}`,
          );
        },
        60_000,
      );
      for (const e of beforeTrouble(counted))
        expect(e.message).toMatch(/^Readiness probe failed: (booting|starting): /);
      // Steady state: s1's probe keeps passing (the kubelet writes nothing), the operator
      // reconciles both machines again and again: no write.
      await quiescent(mgr);
      const writes = mgr.client.writes;
      const controller = mgr.controllers.find((c) => c.def.name === 'oberonmachine');
      const s1 = procs.get('rk-m-s1');
      for (let i = 0; i < 3; i++) {
        expect(runExecProbe(s1?.sts.spec.template.spec.containers[0], s1?.mounts ?? {}).ok).toBe(true);
        controller?.queue.add(`${ns}/n1`);
        controller?.queue.add(`${ns}/s1`);
        await quiescent(mgr, 100);
      }
      expect(mgr.client.writes).toBe(writes);
    } finally {
      for (const p of procs.values()) p.proc.kill('SIGKILL');
      await relay.close();
      rmSync(work, { recursive: true, force: true });
    }
  }, 180_000);
});
