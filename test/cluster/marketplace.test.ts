// The Cozystack catalog installed the way Cozystack installs it (issue 15), on the real node:
// `helm install` of the tenant apps from marketplace/ with the values cozystack-engine passes
// (the form's values plus its injected `_cluster`/`_namespace`), releases named `<prefix><name>`
// in a tenant namespace apart from the operator's. In order, as a cluster meets them:
//   (no CRDs, no platform package: test/envtest/marketplace-no-crds.test.ts, on its own API server);
//   CRDs but no running operator: the install succeeds, its NOTES warn with the platform
//     package's command, and the resource has no status (nothing writes one); a Lease left by an
//     operator that died is named with its age, not taken for a running operator;
//   the operator arrives: it takes up the resource as it stands, to Ready (an OberonKube of 2
//     nodes), and a SheetCluster of 1 node ordered now reaches Ready too, its NOTES saying the
//     operator runs;
//   hostile values are refused before anything is created, naming the field;
//   `helm uninstall` of an app removes its resource and every child.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { OBERONKUBE } from '../../operator/src/controllers/oberonkube.ts';
import { APPS, type App, CATALOG } from '../../operator/src/marketplace/apps.ts';
import { APPS_REPO, prefixOf } from '../../operator/src/marketplace/render.ts';
import { resourcePath } from '../../operator/src/runtime/client.ts';
import { REPO_ROOT } from '../envtest/control-plane.ts';
import {
  apply,
  type Chart,
  client,
  type Deep,
  deleteNamespace,
  freshNamespace,
  getJson,
  helm,
  helmRun,
  installChart,
  kubectl,
  productImage,
  skipReason,
  waitFor,
} from './harness.ts';

const LIMITS = {
  convergeMs: 540_000, // an OberonKube of 2 nodes: ~1 min quiet, minutes on a loaded machine (see oberonkube.test.ts)
  sheetReadyMs: 300_000, // a SheetCluster's apiserver and agent pods from the imported image
  goneMs: 180_000, // helm uninstall → the garbage collector removes every child
} as const;

/** The keys cozystack-engine adds to every tenant app's values (the schema root must stay open). */
const COZY_INJECTED = {
  _cluster: { 'root-host': 'example.org', 'bundle-name': 'paas-full' },
  _namespace: {
    host: 'tenant-a.example.org',
    etcd: 'tenant-root',
    ingress: 'tenant-root',
    monitoring: 'tenant-root',
  },
};

const app = (name: string): App => {
  const a = APPS.find((x) => x.name === name);
  if (!a) throw new Error(`no app ${name} in the catalog`);
  return a;
};
const KUBE_APP = app('oberon-kube');
const SHEET_APP = app('sheet-cluster');
const chartDir = (a: App) => join(REPO_ROOT, APPS_REPO, 'packages/apps', a.name);

function cond(o: Deep, type: string): Deep {
  return (o?.status?.conditions ?? []).find((c: Deep) => c.type === type);
}

describe.skipIf(skipReason())(
  'the Cozystack catalog on the real node (helm install as Cozystack does)',
  () => {
    let opNs: string;
    let tenant: string;
    let operator: Chart | undefined;
    const tmp = mkdtempSync(join(tmpdir(), 'rk-market-cluster-'));
    const valuesFile = (name: string, v: unknown): string => {
      const f = join(tmp, `${name}.yaml`);
      writeFileSync(f, stringify(v));
      return f;
    };
    /** helm install of an app as Cozystack names it: release `<prefix><name>` in the tenant namespace. */
    const installApp = (a: App, name: string, values: Record<string, unknown>, allowFail = false) =>
      helmRun(
        [
          'install',
          `${prefixOf(a)}${name}`,
          chartDir(a),
          '--namespace',
          tenant,
          '-f',
          valuesFile(`${a.name}-${name}`, { ...values, ...COZY_INJECTED }),
        ],
        { allowFail, timeoutMs: 120_000 },
      );
    const uninstallApp = (a: App, name: string) =>
      helm(['uninstall', `${prefixOf(a)}${name}`, '--namespace', tenant, '--wait', '--timeout', '2m']);
    /** Every release Helm recorded in the tenant namespace, whatever its status (its storage Secrets). */
    const releases = async (): Promise<string[]> => [
      ...new Set<string>(
        (await getJson(['secrets', '-n', tenant, '-l', 'owner=helm'])).items.map(
          (s: Deep) => s.metadata.labels.name,
        ),
      ),
    ];
    const operatorRelease = () => `rk-${opNs.split('-').pop()}`;

    beforeAll(async () => {
      opNs = await freshNamespace('rk-platform');
      tenant = await freshNamespace('tenant');
    });
    afterAll(async () => {
      for (const r of await releases().catch(() => []))
        await helm(['uninstall', r, '--namespace', tenant, '--wait', '--timeout', '2m']).catch(
          () => undefined,
        );
      await operator?.uninstall().catch(() => undefined);
      if (tenant) await deleteNamespace(tenant);
      if (opNs) await deleteNamespace(opNs);
      rmSync(tmp, { recursive: true, force: true });
    });

    // "No platform package (no CRDs)" runs on an API server of its own that never had our CRDs:
    // test/envtest/marketplace-no-crds.test.ts (here the CRDs outlive earlier files' releases).

    it('CRDs but no running operator: the install succeeds, NOTES warn with the platform command, the OberonKube has no status', async () => {
      // The platform package installed and uninstalled again: its CRDs stay (helm.sh/resource-policy:
      // keep), its Deployment and Lease are gone — a cluster whose operator was removed.
      const once = await installChart(opNs, operatorRelease());
      await once.uninstall();
      expect((await getJson(['crd', 'oberonkubes.retrokube.io'])).metadata.name).toBe(
        'oberonkubes.retrokube.io',
      );
      await installApp(KUBE_APP, 'farm', KUBE_APP.example);
      const notes = await helm(['get', 'notes', `${prefixOf(KUBE_APP)}farm`, '--namespace', tenant]);
      expect(notes).toContain('OberonKube farm ordered in');
      expect(notes).toContain('WARNING: no retrokube operator is running in this cluster');
      expect(notes).not.toContain(`found ${opNs}/`); // the Lease went with the release
      expect(notes).toContain(`cozypkg add ${CATALOG.platformSource} --allow-privileged`);
      // The resource exists as ordered, and stays without any status: nothing reconciles it.
      const o = await getJson(['oberonkube', '-n', tenant, 'farm']);
      expect(o.spec).toMatchObject(KUBE_APP.example);
      expect(Object.keys(o.spec)).not.toContain('_cluster');
      expect(o.status).toBeUndefined();
      expect(o.metadata.finalizers).toBeUndefined();
      // Judged by what would write a status, not by a wait (#30 item 8): no operator runs anywhere
      // in the cluster — no pod of our image runs `operator` (the NOTES above found no Lease
      // renewed either) — and a watch on the resource, ended by a sentinel write of our own (events
      // come in resourceVersion order), saw nothing else happen to it since it was read.
      const seen: Deep[] = [];
      const watch = await client().stream(
        resourcePath(OBERONKUBE, tenant),
        { watch: 'true', fieldSelector: 'metadata.name=farm', resourceVersion: o.metadata.resourceVersion },
        (ev) => seen.push(ev),
      );
      // The operator just uninstalled may still be terminating: wait until no pod of ours runs it.
      const operators = async (): Promise<string[]> =>
        (await getJson(['pods', '-A'])).items
          .filter((p: Deep) =>
            [...(p.spec.containers ?? []), ...(p.spec.initContainers ?? [])].some(
              (c: Deep) => c.image?.startsWith(`${productImage().repository}:`) && c.args?.[0] === 'operator',
            ),
          )
          .map((p: Deep) => `${p.metadata.namespace}/${p.metadata.name}`);
      await waitFor(
        'no operator pod of ours anywhere in the cluster',
        async () => (await operators()).length === 0,
        90_000,
      );
      const sentinel = String(Date.now());
      await kubectl([
        'annotate',
        'oberonkube',
        '-n',
        tenant,
        'farm',
        `test.retrokube.io/sentinel=${sentinel}`,
      ]);
      const isSentinel = (e: Deep) =>
        e.object?.metadata?.annotations?.['test.retrokube.io/sentinel'] === sentinel;
      await waitFor('the sentinel on the watch', async () => seen.some(isSentinel), 30_000);
      watch.abort();
      expect(seen.filter((e) => !isSentinel(e)).map((e) => [e.type, e.object?.status])).toEqual([]);
      expect(seen.find(isSentinel)?.object).not.toHaveProperty('status');
      expect(seen.find(isSentinel)?.object.metadata.finalizers).toBeUndefined();
      const row = await kubectl(['get', 'oberonkube', '-n', tenant, 'farm', '--no-headers']);
      expect(row.trim().split(/\s+/)).toHaveLength(2); // NAME and AGE only: NODES, PODS, READY empty
      expect(await getJson(['oberonairs,oberonmachines,pods', '-n', tenant])).toMatchObject({ items: [] });
    });

    it('a Lease left by an operator that died is not taken for a running one: NOTES name it and its age', async () => {
      // What an operator installed without the chart's Lease leaves behind: its own Lease, held,
      // last renewed 10 minutes ago.
      const renewed = new Date(Date.now() - 600_000).toISOString().replace('Z', '000Z');
      await apply({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: 'retrokube-operator', namespace: opNs },
        spec: { holderIdentity: 'retrokube-gone_1', leaseDurationSeconds: 15, renewTime: renewed },
      });
      try {
        const r = await helmRun([
          'install',
          `${prefixOf(KUBE_APP)}probe`,
          chartDir(KUBE_APP),
          '--namespace',
          tenant,
          '--dry-run=server',
        ]);
        expect(r.stdout).toContain('WARNING: no retrokube operator is running in this cluster');
        expect(r.stdout).toMatch(
          new RegExp(`found ${opNs}/retrokube-operator \\(last renewed 6\\d\\d s ago\\)`),
        );
      } finally {
        await kubectl(['delete', 'lease', '-n', opNs, 'retrokube-operator']);
      }
    });

    it('the operator arrives: it takes up the OberonKube as it stands, to Ready with 2/2 nodes and 6/6 pods heard', async () => {
      operator = await installChart(opNs, operatorRelease());
      const o = await waitFor(
        'the OberonKube farm Ready, NODES 2/2, PODS 6/6',
        async () => {
          const k = await getJson(['oberonkube', '-n', tenant, 'farm']);
          return (
            cond(k, 'Ready')?.status === 'True' && k.status.nodes === '2/2' && k.status.pods === '6/6' && k
          );
        },
        LIMITS.convergeMs,
      );
      expect(o.status.planeHeard).toBe(true);
      const row = await kubectl(['get', 'oberonkube', '-n', tenant, 'farm', '--no-headers']);
      expect(row).toMatch(/^farm\s+2\/2\s+6\/6\s+True\s/);
    });

    it('a SheetCluster of 1 node ordered now: NOTES say the operator runs, and it reaches Ready 1/1', async () => {
      await installApp(SHEET_APP, 'ledger', SHEET_APP.example);
      const notes = await helm(['get', 'notes', `${prefixOf(SHEET_APP)}ledger`, '--namespace', tenant]);
      expect(notes).toContain('SheetCluster ledger ordered in');
      expect(notes).toMatch(
        new RegExp(
          `The retrokube operator is running \\(Lease ${opNs}/retrokube-operator held by \\S+, renewed \\d+ s ago\\)`,
        ),
      );
      expect(notes).not.toContain('WARNING');
      const s = await waitFor(
        'the SheetCluster ledger Ready, NODES 1/1',
        async () => {
          const c = await getJson(['sheetcluster', '-n', tenant, 'ledger']);
          return cond(c, 'Ready')?.status === 'True' && c.status.nodes === '1/1' && c;
        },
        LIMITS.sheetReadyMs,
      );
      expect(s.spec.nodes).toBe(1);
    });

    it('hostile values are refused before anything is created, the field named', async () => {
      for (const a of [KUBE_APP, SHEET_APP]) {
        for (const h of a.hostile) {
          const r = await installApp(a, 'bad', h.values, true);
          expect(r.code, JSON.stringify(h.values)).not.toBe(0);
          expect(r.stderr).toMatch(/values don't meet the specifications of the schema/);
          expect(r.stderr).toContain(h.field);
          expect(await releases()).not.toContain(`${prefixOf(a)}bad`);
          const left = await getJson([a.def.plural, '-n', tenant]);
          expect(left.items.map((i: Deep) => i.metadata.name)).not.toContain('bad');
        }
      }
    });

    it('helm uninstall of an app removes its resource and every child', async () => {
      const KINDS = 'oberonairs,oberonmachines,statefulsets,deployments,services,secrets,pvc,pods';
      const kubeParts = async () =>
        (
          await getJson([
            KINDS,
            '-n',
            tenant,
            '-l',
            'app.kubernetes.io/name in (retrokube-kube,retrokube-machine,retrokube-air)',
          ])
        ).items;
      const anyOfOurs = async () =>
        (await getJson([KINDS, '-n', tenant, '-l', 'app.kubernetes.io/managed-by=retrokube'])).items;
      expect((await kubeParts()).length).toBeGreaterThanOrEqual(8); // air, relay, 3 machines, their pods, ...
      await uninstallApp(KUBE_APP, 'farm');
      await waitFor(
        'the OberonKube farm and its air, machines, workloads, services, PVCs and pods gone',
        async () =>
          (await getJson(['oberonkubes,oberonairs,oberonmachines', '-n', tenant])).items.length === 0 &&
          (await kubeParts()).length === 0,
        LIMITS.goneMs,
      );
      // The SheetCluster was not touched by the other app's uninstall.
      expect(cond(await getJson(['sheetcluster', '-n', tenant, 'ledger']), 'Ready')?.status).toBe('True');
      await uninstallApp(SHEET_APP, 'ledger');
      await waitFor(
        'the SheetCluster ledger and everything the operator made in the tenant namespace gone',
        async () =>
          (await getJson(['sheetclusters', '-n', tenant])).items.length === 0 &&
          (await anyOfOurs()).length === 0,
        LIMITS.goneMs,
      );
      expect(await releases()).toEqual([]);
    });
  },
);
