// What an OberonKube wants (pure): its settings with defaults, the generated key, and the desired
// children — one OberonAir, N node OberonMachines, the plane OberonMachine once the nodes are
// heard, and (a pod plane) the ConfigMap of live deployment lines. Used by oberonkube.ts.
import { createHmac } from 'node:crypto';
import { GROUP, VERSION } from '../api/group.ts';
import type { OberonKubeSpecT } from '../api/oberonkube.ts';
import {
  type DeploymentItem,
  holdCommand,
  kubeNodeName,
  liveApplyLines,
  parseDeploymentList,
} from '../api/oberonkube-boot.ts';
import { KUBE_DEFAULTS } from '../api/oberonkube-limits.ts';
import { type PlacementSettings, placementSettings } from '../api/placement-settings.ts';
import type { KubeObject } from '../runtime/client.ts';
import { controllerRef, MANAGED_BY } from '../runtime/objects.ts';
import { AIR_LABEL, LIVE_KEY } from './oberonmachine-render.ts';
import { disruptionBudget, ROLE_LABEL } from './placement.ts';

export interface OberonKube extends KubeObject {
  spec?: Partial<OberonKubeSpecT>;
}

export interface KubeSettings {
  name: string;
  namespace: string;
  nodes: number;
  cluster: string;
  deployments: DeploymentItem[];
  runtime: 'pod' | 'kubevirt'; // the nodes'
  planeRuntime: 'pod' | 'kubevirt';
  memory: string;
  storageClass?: string;
  loss: number;
  keySecretRef: { name: string; key: string };
  generatedKey: boolean;
  placement: PlacementSettings;
}

export const kubeAirName = (kube: string): string => `${kube}-air`;
export const liveCommandsName = (kube: string): string => `rk-kube-${kube}-deployments`;
export const keySecretName = (kube: string): string => `rk-kube-${kube}-key`;
export const nodesBudgetName = (kube: string): string => `rk-kube-${kube}-nodes`;

export function kubeSettings(k: OberonKube): KubeSettings {
  const s = k.spec ?? {};
  const name = k.metadata.name as string;
  return {
    name,
    namespace: k.metadata.namespace as string,
    nodes: s.nodes ?? KUBE_DEFAULTS.nodes,
    cluster: s.cluster ?? KUBE_DEFAULTS.cluster,
    deployments: parseDeploymentList(s.deployments),
    runtime: s.runtime ?? KUBE_DEFAULTS.runtime,
    planeRuntime: s.planeRuntime ?? s.runtime ?? KUBE_DEFAULTS.runtime,
    memory: s.memory ?? KUBE_DEFAULTS.memory,
    storageClass: s.storageClass,
    loss: s.loss ?? KUBE_DEFAULTS.loss,
    keySecretRef: s.keySecretRef
      ? { name: s.keySecretRef.name, key: s.keySecretRef.key ?? 'key' }
      : { name: keySecretName(name), key: 'key' },
    generatedKey: !s.keySecretRef,
    placement: placementSettings(s.placement),
  };
}

/** The generated key: 16 hex digits from HMAC(seed, uid) — random to everyone without the seed. */
export function derivedKey(seed: string, uid: string): string {
  return createHmac('sha256', seed).update(`oberonkube/${uid}`).digest('hex').slice(0, 16);
}

/**
 * The desired children: the air, then the nodes, then (when `withPlane`) the plane, and the
 * disruption budget of the node machines (placement.ts). Pure.
 * `planeHold`: the node count in the plane's `Kube.Hold` (kubevirt: a boot command, so the count the
 * plane was created with is kept — a scale must not restart the plane; default `s.nodes`).
 */
export function renderKube(
  k: OberonKube,
  s: KubeSettings,
  withPlane: boolean,
  planeHold: number = s.nodes,
): { air: KubeObject; machines: KubeObject[]; budget: KubeObject; liveCommands?: KubeObject } {
  const labels = {
    'app.kubernetes.io/name': 'retrokube-kube',
    'app.kubernetes.io/instance': s.name,
    'app.kubernetes.io/managed-by': MANAGED_BY,
  };
  const meta = (name: string, component: string) => ({
    name,
    namespace: s.namespace,
    labels: { ...labels, 'app.kubernetes.io/component': component },
    ownerReferences: [controllerRef(k)],
  });
  const air = {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'OberonAir',
    metadata: meta(kubeAirName(s.name), 'air'),
    spec: { loss: s.loss },
  };
  const common = {
    air: kubeAirName(s.name),
    cluster: s.cluster,
    keySecretRef: s.keySecretRef,
    runtime: s.runtime,
    memory: s.memory,
    placement: s.placement,
    ...(s.storageClass ? { disk: { storageClass: s.storageClass } } : {}),
  };
  const machine = (name: string, spec: Record<string, unknown>, component: string): KubeObject => ({
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'OberonMachine',
    metadata: meta(name, component),
    spec: { ...common, ...spec },
  });
  const machines = Array.from({ length: s.nodes }, (_, i) =>
    machine(`${s.name}-${kubeNodeName(i)}`, { role: 'node', nodeName: kubeNodeName(i) }, 'node'),
  );
  // The machines' pods carry the air and role labels (oberonmachine-render.ts).
  const budget = disruptionBudget(meta(nodesBudgetName(s.name), 'node'), {
    [AIR_LABEL]: kubeAirName(s.name),
    [ROLE_LABEL]: 'node',
  });
  const plane = (spec: Record<string, unknown>): KubeObject =>
    machine(`${s.name}-plane`, { role: 'plane', runtime: s.planeRuntime, ...spec }, 'plane');
  if (s.planeRuntime === 'pod') {
    const liveCommands: KubeObject = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: meta(liveCommandsName(s.name), 'plane'),
      // Hold first: a new plane waits for every node before it binds the pods these lines create.
      data: { [LIVE_KEY]: `${holdCommand(s.nodes)}\n${liveApplyLines(s.deployments)}` },
    };
    if (withPlane) machines.push(plane({ liveCommandsConfigMap: liveCommandsName(s.name) }));
    return { air, machines, budget, liveCommands };
  }
  // kubevirt: Hold is a boot command; the deployments reach the running VM through its serial
  // console (oberonkube-plane-console.ts), so changing them never restarts the plane.
  if (withPlane) machines.push(plane({ commands: holdCommand(planeHold) }));
  return { air, machines, budget };
}
