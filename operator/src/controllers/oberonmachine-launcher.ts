// LauncherReady of an OberonMachine on runtime kubevirt: whether the cluster's KubeVirt can run a
// RISC5 machine (the Sidecar gate, a RISC5-capable virt-launcher, the launcher component's own
// report). It reports and never patches (qemu-kubevirt spec §7.1). Used by oberonmachine.ts.
import { CORE, type KubeClient, type KubeObject, type ResourceType } from '../runtime/client.ts';

export const LAUNCHER_LIMITS = {
  launcherCheckMs: 60_000, // the cluster's launcher changes rarely: look once a minute, not per reconcile
} as const;

/** KubeVirt's own CR (read only). */
export const KUBEVIRT: ResourceType = {
  group: 'kubevirt.io',
  version: 'v1',
  plural: 'kubevirts',
  kind: 'KubeVirt',
  namespaced: true,
};

export interface LauncherState {
  ready: boolean;
  reason: string;
  message: string;
}

/** Reads the KubeVirt CR, virt-controller and the launcher component's status ConfigMap (spec §7.1). */
export async function checkLauncher(client: KubeClient): Promise<LauncherState> {
  let kvs: KubeObject[];
  try {
    kvs = (await client.list<KubeObject>(KUBEVIRT)).items ?? [];
  } catch (err) {
    const status = (err as { status?: number }).status;
    if (status === 404)
      return {
        ready: false,
        reason: 'KubeVirtMissing',
        message:
          'KubeVirt is not installed (no kubevirts.kubevirt.io): install virt-operator and a KubeVirt CR with the Sidecar feature gate (docs/qemu.md), or use runtime pod',
      };
    return {
      ready: false,
      reason: 'KubeVirtUnreadable',
      message: `cannot read the KubeVirt CR: ${(err as Error).message}`,
    };
  }
  const kv = kvs[0] as
    | (KubeObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> })
    | undefined;
  if (!kv)
    return {
      ready: false,
      reason: 'KubeVirtMissing',
      message:
        'no KubeVirt CR in the cluster: create one (kubectl get kubevirt -A shows none) with the Sidecar feature gate, or use runtime pod',
    };
  if (kv.metadata.deletionTimestamp)
    return {
      ready: false,
      reason: 'KubeVirtDeleting',
      message: `the KubeVirt CR ${kv.metadata.namespace}/${kv.metadata.name} is being deleted`,
    };
  const gates =
    (kv.spec?.configuration as { developerConfiguration?: { featureGates?: string[] } } | undefined)
      ?.developerConfiguration?.featureGates ?? [];
  if (!gates.includes('Sidecar'))
    return {
      ready: false,
      reason: 'SidecarGateMissing',
      message: `the KubeVirt CR ${kv.metadata.namespace}/${kv.metadata.name} lacks the Sidecar feature gate that runs our onDefineDomain hook: add "Sidecar" to spec.configuration.developerConfiguration.featureGates`,
    };
  const ns = kv.metadata.namespace as string;
  const version = String(kv.status?.observedKubeVirtVersion ?? '');
  const ctrl = await client.getOrUndefined<
    KubeObject & { spec?: { template?: { spec?: { containers?: Array<{ args?: string[] }> } } } }
  >(CORE.deployment, ns, 'virt-controller');
  const args = ctrl?.spec?.template?.spec?.containers?.[0]?.args ?? [];
  const tag = imageTag(args[1] ?? '');
  // The launcher component's own report (ours: the chart's launcher.enabled, or the reference's
  // platform component): a state other than Applied says why the launcher is not (yet) RISC5.
  const cm = await client.getOrUndefined<KubeObject & { data?: Record<string, string> }>(
    CORE.configMap,
    ns,
    'kubevirt-paleo-launcher-status',
  );
  const state = cm?.data?.state;
  const componentSays: LauncherState | undefined =
    state && state !== 'Applied'
      ? {
          ready: false,
          reason: /^[A-Za-z]+$/.test(state) ? state : 'LauncherNotApplied',
          message: `kubevirt-paleo-launcher reports ${state}: ${cm?.data?.reason ?? ''}`.trim(),
        }
      : undefined;
  if (
    args[0] !== '--launcher-image' ||
    !/-(paleo|risc5)-/.test(tag) ||
    (version && !tag.startsWith(`${version}-`))
  )
    return (
      componentSays ?? {
        ready: false,
        reason: 'StockLauncher',
        message: `virt-controller runs launcher ${args[1] ?? '(unknown)'}, not a RISC5-capable ${version || '<version>'}-risc5-* image: install ours with the chart values launcher.enabled=true and launcher.images.${version || '<version>'}=<image> (docs/qemu.md, the launcher switch)`,
      }
    );
  if (componentSays) return componentSays;
  return { ready: true, reason: 'LauncherReady', message: `RISC5 launcher ${args[1]} with the Sidecar gate` };
}

/** An image reference's tag (`repo:5000/x:TAG@sha256:…` → TAG); '' when it has none (digest only). */
export function imageTag(ref: string): string {
  const name = ref.split('@')[0] ?? '';
  const last = name.slice(name.lastIndexOf('/') + 1);
  const colon = last.lastIndexOf(':');
  return colon < 0 ? '' : last.slice(colon + 1);
}

/** checkLauncher, at most once per LAUNCHER_LIMITS.launcherCheckMs for every machine. */
export class LauncherCheck {
  private last: { at: number; state: LauncherState } | undefined;
  async get(client: KubeClient): Promise<LauncherState> {
    if (this.last && Date.now() - this.last.at < LAUNCHER_LIMITS.launcherCheckMs) return this.last.state;
    const state = await checkLauncher(client);
    this.last = { at: Date.now(), state };
    return state;
  }
}
