// The RISC5 launcher component (chart value launcher.enabled; qemu-kubevirt spec §2.2): a loop in
// the KubeVirt namespace that keeps its one customizeComponents patch of the KubeVirt CR in line
// with the table of launcher images (launcher-plan.ts decides) and reports its state in the
// ConfigMap OberonMachine's LauncherReady reads. It is a separate Deployment with its own narrow
// Role, installed only when a person turns it on: the operator itself never patches KubeVirt.

import { CORE, type KubeClient, type KubeObject, resourcePath } from '../runtime/client.ts';
import {
  type CustomizePatch,
  LAUNCHER_COMPONENT,
  LAUNCHER_LOOP_LIMITS,
  type LauncherPlan,
  planLauncher,
} from './launcher-plan.ts';

// The limits live with the pure plan, so the CLI can show them without loading the Kubernetes client.
export { LAUNCHER_LOOP_LIMITS };

import { KUBEVIRT } from './oberonmachine-launcher.ts';

/** The table file: `<KubeVirt version> <launcher image>` per line, `#` comments. */
export function parseLauncherTable(text: string): Record<string, string> {
  const table: Record<string, string> = {};
  const lines = text.split('\n').map((l) => l.trim());
  for (const [n, line] of lines.entries()) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^(v\d+\.\d+\.\d+)\s+(\S+)$/.exec(line);
    if (!m)
      throw new Error(`launcher table line ${n + 1}: want "<vX.Y.Z> <image>", got ${JSON.stringify(line)}`);
    table[m[1] as string] = m[2] as string;
  }
  if (Object.keys(table).length > LAUNCHER_LOOP_LIMITS.tableLines)
    throw new Error(`launcher table: more than ${LAUNCHER_LOOP_LIMITS.tableLines} versions`);
  return table;
}

type KubeVirtObject = KubeObject & {
  spec?: {
    workloadUpdateStrategy?: { workloadUpdateMethods?: string[] };
    customizeComponents?: { patches?: CustomizePatch[] } & Record<string, unknown>;
    configuration?: {
      architectureConfiguration?: {
        amd64?: { emulatedMachines?: string[] } & Record<string, unknown>;
      } & Record<string, unknown>;
    } & Record<string, unknown>;
  };
  status?: { observedKubeVirtVersion?: string; targetKubeVirtVersion?: string };
};
type DeploymentObject = KubeObject & {
  spec?: { template?: { spec?: { containers?: Array<{ name?: string; image?: string; args?: string[] }> } } };
};

export interface LauncherPass extends LauncherPlan {
  /** The KubeVirt CR was written in this pass. */
  wrote: boolean;
}

/** One pass: read, decide, write the CR (resourceVersion-tested) and the status ConfigMap. */
export async function launcherPass(
  client: KubeClient,
  opts: { namespace: string; table: Record<string, string>; allowWorkloadUpdate: boolean },
): Promise<LauncherPass> {
  const kvs = (await client.list<KubeVirtObject>(KUBEVIRT, opts.namespace)).items ?? [];
  const kv = kvs[0];
  let plan: LauncherPlan;
  let wrote = false;
  if (!kv) plan = { state: 'Doubt', reason: `no KubeVirt CR in namespace ${opts.namespace}` };
  else {
    const ctrl = await client.getOrUndefined<DeploymentObject>(
      CORE.deployment,
      opts.namespace,
      LAUNCHER_COMPONENT.controller,
    );
    const c0 = ctrl?.spec?.template?.spec?.containers?.[0];
    plan = planLauncher({
      kubevirt: {
        deleting: !!kv.metadata.deletionTimestamp,
        observedVersion: kv.status?.observedKubeVirtVersion ?? '',
        targetVersion: kv.status?.targetKubeVirtVersion ?? '',
        workloadUpdateMethods: kv.spec?.workloadUpdateStrategy?.workloadUpdateMethods ?? [],
        annotations: (kv.metadata.annotations as Record<string, string> | undefined) ?? {},
        patches: kv.spec?.customizeComponents?.patches ?? [],
        emulatedMachines: kv.spec?.configuration?.architectureConfiguration?.amd64?.emulatedMachines,
      },
      controller: c0 ? { name: c0.name ?? '', image: c0.image ?? '', args: c0.args ?? [] } : undefined,
      table: opts.table,
      allowWorkloadUpdate: opts.allowWorkloadUpdate,
    });
    if (plan.patches || plan.emulatedMachines) {
      // Read-modify-write: the patches list is atomic (no server-side apply); the test of the
      // resourceVersion makes a write based on a stale read fail instead of dropping others' entries.
      const ops: unknown[] = [
        { op: 'test', path: '/metadata/resourceVersion', value: kv.metadata.resourceVersion },
      ];
      if (plan.patches)
        ops.push({
          op: 'add',
          path: '/spec/customizeComponents',
          value: { ...(kv.spec?.customizeComponents ?? {}), patches: plan.patches },
        });
      if (plan.emulatedMachines) {
        const conf = kv.spec?.configuration ?? {};
        const arch = conf.architectureConfiguration ?? {};
        ops.push({
          op: 'add',
          path: '/spec/configuration',
          value: {
            ...conf,
            architectureConfiguration: {
              ...arch,
              amd64: { ...(arch.amd64 ?? {}), emulatedMachines: plan.emulatedMachines },
            },
          },
        });
      }
      await client.request('PATCH', resourcePath(KUBEVIRT, opts.namespace, kv.metadata.name as string), {
        body: ops,
        contentType: 'application/json-patch+json',
      });
      wrote = true;
    }
  }
  await writeStatus(client, opts.namespace, plan, kv?.status?.observedKubeVirtVersion ?? '');
  return { ...plan, wrote };
}

/** The status ConfigMap, written only when state, reason or image change (a steady loop writes nothing). */
async function writeStatus(client: KubeClient, namespace: string, plan: LauncherPlan, version: string) {
  const data = {
    state: plan.state,
    reason: plan.reason,
    kubevirtVersion: version,
    launcherImage: plan.image ?? '',
  };
  const cm = await client.getOrUndefined<KubeObject & { data?: Record<string, string> }>(
    CORE.configMap,
    namespace,
    LAUNCHER_COMPONENT.statusConfigMap,
  );
  const same = cm && Object.entries(data).every(([k, v]) => cm.data?.[k] === v);
  if (same) return;
  await client.apply(
    CORE.configMap,
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: LAUNCHER_COMPONENT.statusConfigMap, namespace },
      data: { ...data, updated: new Date().toISOString() },
    },
    LAUNCHER_LOOP_LIMITS.fieldManager,
  );
}
