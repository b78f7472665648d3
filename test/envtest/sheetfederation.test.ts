// SheetFederation and SheetMigration against a real kube-apiserver, with two real Sheeternetes
// apiservers (signing on) and a real node agent each running real processes. The operator is
// killed in the middle of a migration and a new one resumes it from status alone.
import { afterEach, describe, expect, it } from 'vitest';
import { SHEETCLUSTER } from '../../operator/src/controllers/sheetcluster.ts';
import { SHEETFEDERATION } from '../../operator/src/controllers/sheetfederation.ts';
import { SHEETMIGRATION } from '../../operator/src/controllers/sheetmigration.ts';
import {
  deploySleeper,
  hasDeployment,
  runningPods,
  type SheetClusterKit,
  startSheetCluster,
} from '../../operator/src/sheets/bridge/testkit.ts';
import type { Row } from '../../operator/src/sheets/store/types.ts';
import { freshNamespace } from './harness.ts';
import { CORE, startOperator, testClient, waitFor } from './operator-harness.ts';
import { sheetCluster as sheetClusterObject } from './sheetcluster-kit.ts';
import { federation, memberOf, migration, phaseOf, untilPhase } from './sheetfed-kit.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests read status fields of unstructured objects.
type Deep = any;

type SheetCluster = SheetClusterKit;

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c().catch(() => {});
});

async function sheetCluster(name: string, cpuTotal: number): Promise<SheetCluster> {
  const c = await startSheetCluster({ name, cpuTotal });
  closers.push(() => c.close());
  await waitFor(`${name} node registered`, async () => c.store.rows('Nodes').length === 1);
  return c;
}

const running = runningPods;
const has = hasDeployment;
const deploy = deploySleeper;

async function reasons(k: ReturnType<typeof testClient>, ns: string, name: string): Promise<string[]> {
  const list: Deep = await k.list(CORE.event, ns);
  return list.items.filter((e: Deep) => e.regarding?.name === name).map((e: Deep) => e.reason);
}

/**
 * Until the Events of `name` include every reason in `wanted`. An Event is recorded after the
 * status it tells of, so a test that has just seen a phase may list the Events a moment before
 * that phase's one is there (CI once did, for RolledBack).
 */
async function untilReasons(k: ReturnType<typeof testClient>, ns: string, name: string, wanted: string[]) {
  let seen: string[] = [];
  try {
    await waitFor(`${name}'s Events ${wanted.join(', ')}`, async () => {
      seen = await reasons(k, ns, name);
      return wanted.every((x) => seen.includes(x));
    });
  } catch (e) {
    throw new Error(`${(e as Error).message}; seen: ${seen.join(', ')}`);
  }
}

/** Watches a cluster's sheet: the largest replica count ever declared for `d`, and pods at once. */
function highWater(c: SheetCluster, d: string): { replicas: number; pods: number } {
  const hw = { replicas: 0, pods: 0 };
  const look = () => {
    const row = c.store.rows('Deployments').find((r: Row) => r.name === d);
    hw.replicas = Math.max(hw.replicas, Number(row?.replicas ?? 0));
    hw.pods = Math.max(hw.pods, c.store.rows('Pods').filter((p) => p.deployment === d).length);
  };
  const off = c.store.onChange(look);
  closers.push(async () => off());
  return hw;
}

describe('SheetFederation', () => {
  it('reports every member, merges services, syncs on its interval and stretches by free CPU', async () => {
    const ns = await freshNamespace('skfed');
    const k = testClient();
    const local = await sheetCluster('local', 1000);
    const peer = await sheetCluster('peer', 4000);
    await deploy(local, 'api', 1);
    await deploy(peer, 'db', 1);
    await deploy(local, 'web', 1, 250);
    await startOperator({ namespace: ns });
    const members = [await memberOf(k, ns, local), await memberOf(k, ns, peer)];
    await k.create(
      SHEETFEDERATION,
      federation(ns, 'fed', {
        members,
        sync: { enabled: true, intervalSeconds: 5 },
        stretched: [{ deployment: 'web', replicas: 6 }],
      }),
    );
    const st: Deep = await waitFor(
      'members reported, sync done, web stretched and running',
      async () => {
        const f: Deep = await k.get(SHEETFEDERATION, ns, 'fed');
        const s = f.status;
        return (
          s?.members?.every((m: Deep) => m.reachable && m.nodesReady === 1) &&
          has(local, 'db') &&
          has(peer, 'api') &&
          running(local, 'web') === 3 &&
          running(peer, 'web') === 3 &&
          s
        );
      },
      60_000,
    ).catch(async (e) => {
      const f: Deep = await k.get(SHEETFEDERATION, ns, 'fed');
      throw new Error(
        `${e.message}; status ${JSON.stringify(f.status)}; local pods ${JSON.stringify(local.store.rows('Pods'))}; peer pods ${JSON.stringify(peer.store.rows('Pods'))}`,
      );
    });
    // after the sync every member holds every service; the home (first member) answers for all
    expect(st.services.map((s: Deep) => [s.name, s.home, s.members])).toEqual([
      ['api', 'local', ['local', 'peer']],
      ['db', 'local', ['local', 'peer']],
      ['web', 'local', ['local', 'peer']],
    ]);
    // local: 1000m minus api and the synced db (100m each) = 800m; web 250m each, its own replicas
    // counting as free → 3 there; the other 3 on the peer
    expect(st.stretched[0].planned).toEqual([
      { member: 'local', replicas: 3 },
      { member: 'peer', replicas: 3 },
    ]);
    expect(st.conditions.find((c: Deep) => c.type === 'Ready').status).toBe('True');
    await untilReasons(k, ns, 'fed', ['Synced', 'StretchGrow']);
  }, 120_000);

  it('says which member is unreachable or which Secret is missing, and writes nothing', async () => {
    const ns = await freshNamespace('skfed-bad');
    const k = testClient();
    const local = await sheetCluster('local', 1000);
    await deploy(local, 'api', 1);
    await startOperator({ namespace: ns });
    const good = await memberOf(k, ns, local);
    await k.create(
      SHEETFEDERATION,
      federation(ns, 'fed', {
        members: [
          good,
          { name: 'gone', url: 'http://127.0.0.1:1', tokenSecretRef: { name: 'local-creds', key: 'token' } },
          { name: 'nosecret', url: local.url, tokenSecretRef: { name: 'nope', key: 'token' } },
        ],
        sync: { enabled: true, intervalSeconds: 5 },
      }),
    );
    const st: Deep = await waitFor('members judged', async () => {
      const f: Deep = await k.get(SHEETFEDERATION, ns, 'fed');
      return f.status?.members?.length === 3 && f.status;
    });
    expect(st.members[0].reachable).toBe(true);
    expect(st.members[1]).toMatchObject({ name: 'gone', reachable: false });
    expect(st.members[1].message).toMatch(/cannot reach a cluster: .* \(member gone\)/);
    expect(st.members[2].message).toBe(`member nosecret: token Secret ${ns}/nope does not exist`);
    expect(st.conditions.find((c: Deep) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'MemberUnreachable',
    });
    expect(st.lastSync).toBeUndefined(); // no sync with a member out of view
  }, 60_000);
});

/** A namespace, two clusters with `replicas` of `deploy` running on local, and the spec's members. */
async function migrationSetup(prefix: string, deploy_: string, replicas: number) {
  const ns = await freshNamespace(prefix);
  const k = testClient();
  const local = await sheetCluster('local', 2000);
  const peer = await sheetCluster('peer', 2000);
  await deploy(local, deploy_, replicas);
  await waitFor(`${deploy_} running on local`, async () => running(local, deploy_) === replicas, 30_000);
  const spec = {
    deployment: deploy_,
    from: await memberOf(k, ns, local),
    to: await memberOf(k, ns, peer),
    pollSeconds: 1,
    waitSeconds: 60,
  };
  return { ns, k, local, peer, spec };
}

describe('SheetMigration', () => {
  it('moves a deployment make-before-break, an Event for every phase', async () => {
    const { ns, k, local, peer, spec } = await migrationSetup('skmig', 'mover', 2);
    const hw = highWater(peer, 'mover');
    await startOperator({ namespace: ns });
    await k.create(SHEETMIGRATION, migration(ns, 'move', spec));
    const st = await untilPhase(k, ns, 'move', 'Succeeded', 90_000);
    expect(st.replicas).toBe(2);
    expect(has(local, 'mover')).toBe(false);
    expect(running(peer, 'mover')).toBe(2);
    expect(hw.replicas).toBe(2);
    await untilReasons(k, ns, 'move', ['ScalingTarget', 'WaitingTarget', 'DrainingSource', 'Succeeded']);
    // status.message and each Event follow the phase: no phase speaks with an earlier phase's words.
    expect(st.message).not.toMatch(/ScalingTarget|WaitingTarget|DrainingSource/);
    const events: Deep[] = (await k.list(CORE.event, ns)).items.filter(
      (e: Deep) => e.regarding?.name === 'move',
    );
    for (const e of events.filter((x) => x.reason !== 'ScalingTarget'))
      expect([e.reason, e.note]).not.toEqual([e.reason, expect.stringMatching(/: ScalingTarget/)]);
    const succeeded = events.find((e) => e.reason === 'Succeeded');
    expect(succeeded?.note).toMatch(/→ Succeeded: (?!ScalingTarget)/);
  }, 120_000);

  it('rolls back when the target degrades inside the window', async () => {
    const { ns, k, local, peer, spec: base } = await migrationSetup('skmig-rb', 'fragile', 1);
    await startOperator({ namespace: ns });
    const spec = { ...base, rollbackWindowSeconds: 60 };
    await k.create(SHEETMIGRATION, migration(ns, 'move', spec));
    await waitFor('Watching', async () => (await phaseOf(k, ns, 'move')).phase === 'Watching', 60_000);
    await peer.stopAgent(); // the target degrades on purpose
    const st = await untilPhase(k, ns, 'move', 'RolledBack', 90_000);
    expect(st.message).toBe('target degraded to 0/1; restored on source');
    expect(has(local, 'fragile')).toBe(true);
    expect(running(local, 'fragile')).toBe(1);
    expect(has(peer, 'fragile')).toBe(false);
    await untilReasons(k, ns, 'move', ['RollingBack', 'RolledBack']);
  }, 150_000);

  it('an operator killed between a step and its status resumes from status alone and never double-scales', async () => {
    const { ns, k, local, peer, spec } = await migrationSetup('skmig-kill', 'mover', 2);
    const hw = highWater(peer, 'mover');
    // The first operator dies right after the target was scaled, before it could record that.
    let crashed = false;
    const first = await startOperator({
      namespace: ns,
      migration: {
        afterWrites: async (_key, next) => {
          if (next.phase === 'WaitingTarget' || crashed) {
            crashed = true;
            throw new Error('operator killed (test)');
          }
        },
      },
    });
    await k.create(SHEETMIGRATION, migration(ns, 'move', spec));
    await waitFor(
      'the first operator crashed after scaling the target',
      async () => crashed && has(peer, 'mover'),
      30_000,
    );
    await first.stop();
    expect((await phaseOf(k, ns, 'move')).phase).toBe('ScalingTarget'); // the write happened, the status did not
    await startOperator({ namespace: ns });
    const st = await untilPhase(k, ns, 'move', 'Succeeded', 90_000);
    expect(st.replicas).toBe(2);
    expect(hw.replicas).toBe(2); // the re-run step wrote the same absolute count
    expect(hw.pods).toBe(2);
    expect(has(local, 'mover')).toBe(false);
    expect(running(peer, 'mover')).toBe(2);
  }, 150_000);

  it('bad input: a deployment missing on the source, a target without room, a target that never runs', async () => {
    const ns = await freshNamespace('skmig-bad');
    const k = testClient();
    const local = await sheetCluster('local', 2000);
    const peer = await sheetCluster('peer', 1000);
    await startOperator({ namespace: ns });
    const from = await memberOf(k, ns, local);
    const to = await memberOf(k, ns, peer);
    await k.create(SHEETMIGRATION, migration(ns, 'ghost', { deployment: 'ghost', from, to }));
    await deploy(local, 'huge', 3, 500);
    await k.create(SHEETMIGRATION, migration(ns, 'huge', { deployment: 'huge', from, to }));
    await local.api.apply([{ name: 'never', image: 'nginx:alpine', replicas: 1, cpu_req: 100, mem_req: 16 }]);
    await k.create(
      SHEETMIGRATION,
      migration(ns, 'never', { deployment: 'never', from, to, waitSeconds: 3, pollSeconds: 1 }),
    );
    const failed = async (n: string) =>
      waitFor(
        `${n} Failed`,
        async () => {
          const s = await phaseOf(k, ns, n);
          return s.phase === 'Failed' && s;
        },
        60_000,
      );
    expect((await failed('ghost')).message).toBe("deployment 'ghost' not found on source");
    expect((await failed('huge')).message).toMatch(
      /target has 1000m CPU free for 'huge' but 3 x 500m = 1500m are needed; nothing was written/,
    );
    expect((await failed('never')).message).toBe(
      "timeout: 'never' not Ready on target within 3s; source left intact (no downtime)",
    );
    expect(has(local, 'huge')).toBe(true);
    expect(has(local, 'never')).toBe(true);
    expect(has(peer, 'huge') || has(peer, 'never')).toBe(false);
  }, 120_000);
});

describe('SheetFederation over two SheetClusters', () => {
  it("finds each member's apiserver and Secrets through its SheetCluster and federates them", async () => {
    const ns = await freshNamespace('skfed-sc');
    const k = testClient();
    // The SheetClusters' apiservers are ours in this process (no kubelet runs their pods here); the
    // operator reaches a SheetCluster at the address the test gives, as it would reach its Service.
    const servers = new Map<string, SheetClusterKit>();
    await startOperator({
      namespace: ns,
      keySeed: 'skfed-sc-seed',
      sheetsAddress: (_ns, cluster) => servers.get(cluster)?.url ?? 'http://127.0.0.1:9',
    });
    for (const name of ['east', 'west'])
      await k.create(SHEETCLUSTER, sheetClusterObject(ns, name, { nodes: 1 }));
    // The operator generated each cluster's token and signing key; its apiserver must use them.
    const secret = async (name: string) => {
      const s: Deep = await waitFor(`Secret ${name}`, () => k.getOrUndefined<Deep>(CORE.secret, ns, name));
      const [entry] = Object.values(s.data as Record<string, string>);
      return Buffer.from(entry, 'base64').toString('utf8').trim();
    };
    for (const name of ['east', 'west']) {
      const c = await startSheetCluster({
        name,
        cpuTotal: 2000,
        token: await secret(`rk-sheets-${name}-token`),
        key: await secret(`rk-sheets-${name}-signing`),
      });
      closers.push(() => c.close());
      servers.set(name, c);
    }
    const east = servers.get('east') as SheetClusterKit;
    const west = servers.get('west') as SheetClusterKit;
    await deploy(east, 'api', 1);
    await k.create(
      SHEETFEDERATION,
      federation(ns, 'fed', {
        members: [
          { name: 'east', sheetCluster: 'east' },
          { name: 'west', sheetCluster: 'west' },
        ],
        sync: { enabled: true, intervalSeconds: 5 },
      }),
    );
    const st: Deep = await waitFor(
      'both SheetClusters reachable and synced',
      async () => {
        const f: Deep = await k.get(SHEETFEDERATION, ns, 'fed');
        return f.status?.members?.every((m: Deep) => m.reachable) && has(west, 'api') && f.status;
      },
      60_000,
    );
    expect(st.members.map((m: Deep) => m.name)).toEqual(['east', 'west']);
    expect(st.services).toEqual([{ name: 'api', home: 'east', members: ['east', 'west'], active: 'east' }]);
    // a member naming a SheetCluster that does not exist says so
    await expect(
      k.create(
        SHEETFEDERATION,
        federation(ns, 'both', {
          members: [
            { name: 'a', sheetCluster: 'east', url: 'http://x.example' },
            { name: 'b', sheetCluster: 'west' },
          ],
        }),
      ),
    ).rejects.toThrow(/give exactly one of url and sheetCluster/);
  }, 120_000);
});
