// A SheetMigration whose member Secrets the operator may not read, the operator acting as the
// chart's ServiceAccount (impersonated, exactly the chart's RBAC: no Secret read anywhere). The
// migration waits in Pending with the two commands that grant `get` on each named Secret and
// writes nothing to either cluster; running exactly those commands lets it finish.
import { describe, expect, it } from 'vitest';
import { SHEETMIGRATION } from '../../operator/src/controllers/sheetmigration.ts';
import {
  deploySleeper,
  hasDeployment,
  runningPods,
  startSheetCluster,
} from '../../operator/src/sheets/bridge/testkit.ts';
import { installChartRbac, run } from './chart-rbac.ts';
import { freshNamespace, kubeconfigPath, serviceAccountKubeConfig, testBins } from './harness.ts';
import { startOperator, testClient, waitFor } from './operator-harness.ts';
import { memberOf, migration } from './sheetfed-kit.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate API objects freely
type Deep = any;

describe('a SheetMigration whose Secrets the operator may not read (chart ServiceAccount)', () => {
  it('waits in Pending with the exact grant, writes nothing, and finishes once granted', async () => {
    const ns = await freshNamespace('skmig-access');
    const k = testClient();
    const sa = await installChartRbac(k, ns);
    const local = await startSheetCluster({ name: 'local', cpuTotal: 2000 });
    const peer = await startSheetCluster({ name: 'peer', cpuTotal: 2000 });
    try {
      await deploySleeper(local, 'mover', 1);
      await waitFor('mover running on local', async () => runningPods(local, 'mover') === 1, 30_000);
      const spec = {
        deployment: 'mover',
        from: await memberOf(k, ns, local),
        to: await memberOf(k, ns, peer),
        pollSeconds: 1,
      };
      await startOperator({ namespace: ns, kubeConfig: serviceAccountKubeConfig(ns, sa) });
      await k.create(SHEETMIGRATION, migration(ns, 'move', spec));
      const subject = `--serviceaccount=${ns}:${sa}`;
      const refused: Deep = await waitFor('the refusal in status', async () => {
        const o: Deep = await k.get(SHEETMIGRATION, ns, 'move');
        return /may not read Secret/.test(o.status?.message ?? '') && o.status;
      });
      expect(refused.phase).toBe('Pending');
      // Both members' Secrets are read at once: whichever refusal comes back first is named.
      const first = /may not read Secret (\S+)/.exec(refused.message)?.[1] ?? '';
      expect(['local-creds', 'peer-creds']).toContain(first);
      expect(refused.message).toContain(
        `kubectl -n ${ns} create role retrokube-read-${first} --verb=get --resource=secrets --resource-name=${first} && ` +
          `kubectl -n ${ns} create rolebinding retrokube-read-${first} --role=retrokube-read-${first} ${subject}`,
      );
      expect(refused.message).not.toContain(local.token); // no secret value ever reaches status
      expect(hasDeployment(peer, 'mover')).toBe(false);

      // Grant exactly what the messages say, Secret by Secret, until the migration runs.
      const granted = new Set<string>();
      const done: Deep = await waitFor(
        'Succeeded after the grants',
        async () => {
          const o: Deep = await k.get(SHEETMIGRATION, ns, 'move');
          const msg: string = o.status?.message ?? '';
          const secret = /may not read Secret (\S+)/.exec(msg)?.[1];
          if (secret && !granted.has(secret)) {
            granted.add(secret);
            const commands = msg
              .slice(msg.indexOf('kubectl'), msg.indexOf(subject) + subject.length)
              .split(' && ');
            for (const c of commands) {
              const r = await run(testBins().kubectl, [
                '--kubeconfig',
                kubeconfigPath(),
                ...c.trim().split(/\s+/).slice(1),
              ]);
              expect(r.code, `${c}: ${r.stderr}`).toBe(0);
            }
          }
          return o.status?.phase === 'Succeeded' && o.status;
        },
        90_000,
      );
      expect([...granted].sort()).toEqual(['local-creds', 'peer-creds']);
      expect(done.replicas).toBe(1);
      expect(hasDeployment(local, 'mover')).toBe(false);
      expect(runningPods(peer, 'mover')).toBe(1);
    } finally {
      await local.close();
      await peer.close();
    }
  }, 150_000);
});
