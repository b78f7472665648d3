// Pure renders of an OberonMachine's children, for both runtimes:
//   pod:      StatefulSet rk-m-<name> (one pod running `retrokube machine run` on a PVC disk) and
//             Service rk-m-<name> (the VNC port);
//   kubevirt: ConfigMap rk-m-<name>-hook (our onDefineDomain), PVC rk-m-<name>-disk, Job
//             rk-m-<name>-fill-<hash> (seeds the PVC), VirtualMachine rk-m-<name>
//             (qemu-kubevirt-cozystack spec §2.3, §7).
// The KubeNet key never appears in a child: pods take it from the Secret through an env var that
// the kubelet expands in the arguments, and the fill Job copies it onto the machine's volume, where
// the hook substitutes it for $(KEY).

import { readFileSync } from 'node:fs';
import { joinCommands, nodeRoleCommands, planeRoleCommands } from '../api/oberonkube-boot.ts';
import type { OberonMachineSpecT } from '../api/oberonmachine.ts';
import { MACHINE_DEFAULTS } from '../api/oberonmachine-limits.ts';
import { type PlacementSettings, placementSettings } from '../api/placement-settings.ts';
import { KEY_REFERENCE } from '../machine/boot-key.ts';
import { LIVE_CONFIGMAP_KEY } from '../machine/live-configmap-ref.ts';
import { PAYLOAD_LIMITS } from '../machine/payload-limits.ts';
import type { KubeObject } from '../runtime/client.ts';
import { controllerRef, hashOf, MANAGED_BY } from '../runtime/objects.ts';
import { KUBEVIRT_MACHINE_TYPE } from './launcher-plan.ts';
import { machinePlacement, type PodPlacement, ROLE_LABEL } from './placement.ts';
import { restrictedContainerSecurity, restrictedPodSecurity } from './pod-security.ts';

export const RENDER_LIMITS = {
  vncPort: 5900, // RFB's customary port
  airPort: 7524, // the relay's port (OberonAir default)
  uid: 1000, // the image's `node` user
  qemuGid: 107, // qemu's group in the launcher pod: the fill Job must share it (spec §2.3)
  fillUid: 10001, // the fill Job's non-root user (as the catalog's)
  fillBackoffLimit: 10, // the volume may still be attached elsewhere: retry a while
  fillDeadlineSeconds: 1800,
  fillTtlSeconds: 3600,
  probeDelaySeconds: 3, // the emulator boots in about a second: no "booting" event at every start
  probePeriodSeconds: 10, // a shell builtin reading a tiny file: cheap even this often
  statusVolume: '1Mi', // the status file is a few hundred bytes (tmpfs, counted as the pod's memory)
} as const;

/** Where the machine container keeps its status file (`machine run --status-file`, an emptyDir). */
export const STATUS_DIR = '/run/retrokube';
export const STATUS_FILE = `${STATUS_DIR}/status`;
/**
 * The readiness probe: prints the emulator's first status line (the kubelet quotes it in its
 * `Unhealthy` event) and passes only on `booted:`. Only /bin/sh and its builtins: no node
 * process per probe.
 */
export const PROBE_SCRIPT = `{ read -r s < ${STATUS_FILE}; } 2>/dev/null || s='starting: the emulator has not written ${STATUS_FILE} yet'; echo "$s"; case "$s" in booted:*) exit 0;; esac; exit 1`;

export const LIVE_KEY = LIVE_CONFIGMAP_KEY; // the live ConfigMap's entry: Kube.Apply lines
// "$$" escapes the reference from the kubelet: `machine run` gets $(RK_KEY) literally and puts the
// key from the env var in its place after checking it is hex (machine/boot-key.ts).
export const KEY_PLACEHOLDER_POD = `$${KEY_REFERENCE}`;
export const KEY_PLACEHOLDER_VM = '$(KEY)'; // substituted by our hook from /payload/key
export const AIR_LABEL = 'retrokube.io/air';
export const DESCRIPTOR_ANNOTATION = 'paleocomputing.io/machine';
export const HOOK_SCRIPT = readFileSync(
  new URL('../../../images/virt-launcher/onDefineDomain.py', import.meta.url),
  'utf8',
);

export interface MachineSettings {
  name: string;
  namespace: string;
  air?: string;
  role: 'plane' | 'node' | 'standalone';
  nodeName?: string;
  cluster: string;
  keySecretRef?: { name: string; key: string };
  commands?: string;
  liveCommandsConfigMap?: string;
  runtime: 'pod' | 'kubevirt';
  memory: string;
  diskSize: string;
  storageClass?: string;
  diskImage?: string;
  running: boolean;
  /** Serve VNC on the pod address; default loopback (kubectl port-forward). */
  vncExposed: boolean;
  /** The Secret entry with the VNC password (the kubelet hands it to the machine as RK_VNC_PASSWORD). */
  vncPasswordRef?: { name: string; key: string };
  placement: PlacementSettings;
}

export interface OberonMachine extends KubeObject {
  spec?: Partial<OberonMachineSpecT>;
}

export function machineSettings(m: OberonMachine): MachineSettings {
  const s = m.spec ?? {};
  return {
    name: m.metadata.name as string,
    namespace: m.metadata.namespace as string,
    air: s.air,
    role: s.role ?? MACHINE_DEFAULTS.role,
    nodeName: s.nodeName,
    cluster: s.cluster ?? MACHINE_DEFAULTS.cluster,
    keySecretRef: s.keySecretRef
      ? { name: s.keySecretRef.name, key: s.keySecretRef.key ?? 'key' }
      : undefined,
    commands: s.commands,
    liveCommandsConfigMap: s.liveCommandsConfigMap,
    runtime: s.runtime ?? MACHINE_DEFAULTS.runtime,
    memory: s.memory ?? MACHINE_DEFAULTS.memory,
    diskSize: s.disk?.size ?? MACHINE_DEFAULTS.diskSize,
    storageClass: s.disk?.storageClass,
    diskImage: s.disk?.image,
    running: s.running ?? MACHINE_DEFAULTS.running,
    vncExposed: s.vnc?.expose ?? false,
    vncPasswordRef: s.vnc?.passwordSecretRef
      ? { name: s.vnc.passwordSecretRef.name, key: s.vnc.passwordSecretRef.key ?? 'password' }
      : undefined,
    placement: placementSettings(s.placement),
  };
}

/** The boot commands with a placeholder where the key goes (or no key when there is no Secret). */
export function bootText(s: MachineSettings, keyPlaceholder: string): string {
  const key = s.keySecretRef ? keyPlaceholder : '';
  const role =
    s.role === 'plane'
      ? planeRoleCommands(s.cluster, key)
      : s.role === 'node'
        ? nodeRoleCommands(s.nodeName ?? '', s.cluster, key)
        : undefined;
  return joinCommands([role, s.commands]);
}

export const machineChild = (name: string): string => `rk-m-${name}`;
/** The ServiceAccount, Role and RoleBinding of a machine with a live ConfigMap (oberonmachine-live.ts). */
export const liveReaderName = (machine: string): string => `${machineChild(machine)}-live`;
export const relayHost = (air: string): string => `rk-air-${air}`;

export function selectorLabels(s: MachineSettings): Record<string, string> {
  return { 'app.kubernetes.io/name': 'retrokube-machine', 'app.kubernetes.io/instance': s.name };
}

function labels(s: MachineSettings, component: string): Record<string, string> {
  return {
    ...selectorLabels(s),
    'app.kubernetes.io/component': component,
    'app.kubernetes.io/managed-by': MANAGED_BY,
    ...(s.air ? { [AIR_LABEL]: s.air } : {}),
  };
}

function meta(owner: KubeObject, s: MachineSettings, name: string, component: string) {
  return {
    name,
    namespace: s.namespace,
    labels: labels(s, component),
    ownerReferences: [controllerRef(owner)],
  };
}

/** Where the machine's pod goes among its air's machines (placement.ts); the labels it is found by. */
function placement(s: MachineSettings): PodPlacement {
  return machinePlacement(s.air, s.role, AIR_LABEL, s.placement);
}
const placementLabels = (s: MachineSettings) => (s.air ? { [AIR_LABEL]: s.air, [ROLE_LABEL]: s.role } : {});

// --- runtime pod ----------------------------------------------------------------------------------

/** `held`: the machine may not start yet (its relay has no ready endpoint): no replica. */
export function renderPod(
  owner: KubeObject,
  s: MachineSettings,
  image: string,
  opts: { held?: boolean } = {},
): { statefulSet: KubeObject; service: KubeObject } {
  const name = machineChild(s.name);
  const text = bootText(s, KEY_PLACEHOLDER_POD);
  const args = [
    'machine',
    'run',
    '/disk/oberon.dsk',
    '--in-place',
    '--vnc',
    String(RENDER_LIMITS.vncPort),
    '--vnc-host',
    // Loopback unless the user exposes it: `kubectl port-forward` reaches it inside the pod.
    s.vncExposed ? '0.0.0.0' : '127.0.0.1',
    '--status-file',
    STATUS_FILE,
  ];
  // Without a password Secret the screen stays on the pod's loopback, behind `pods/portforward` RBAC.
  if (!s.vncPasswordRef) args.push('--vnc-no-password');
  if (text) args.push('--commands', text);
  if (s.air) args.push('--air', `${relayHost(s.air)}:${RENDER_LIMITS.airPort}`);
  // The plane follows its deployments ConfigMap through the API (an edit in seconds; a mounted
  // volume waits for the kubelet's sync, about a minute), as the ServiceAccount of oberonmachine-live.ts.
  if (s.liveCommandsConfigMap) args.push('--live-configmap', `${s.namespace}/${s.liveCommandsConfigMap}`);
  const env = [
    ...(s.keySecretRef
      ? [
          {
            name: 'RK_KEY',
            valueFrom: { secretKeyRef: { name: s.keySecretRef.name, key: s.keySecretRef.key } },
          },
        ]
      : []),
    ...(s.vncPasswordRef
      ? [
          {
            name: 'RK_VNC_PASSWORD',
            valueFrom: { secretKeyRef: { name: s.vncPasswordRef.name, key: s.vncPasswordRef.key } },
          },
        ]
      : []),
  ];
  const seedImage = s.diskImage ?? image;
  const pvc: Record<string, unknown> = {
    metadata: { name: 'disk' },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: s.diskSize } },
      ...(s.storageClass ? { storageClassName: s.storageClass } : {}),
    },
  };
  const statefulSet: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: meta(owner, s, name, 'machine'),
    spec: {
      replicas: s.running && !opts.held ? 1 : 0,
      serviceName: name,
      podManagementPolicy: 'Parallel',
      selector: { matchLabels: selectorLabels(s) },
      persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Delete', whenScaled: 'Retain' },
      volumeClaimTemplates: [pvc],
      template: {
        metadata: {
          labels: {
            ...selectorLabels(s),
            'app.kubernetes.io/component': 'machine',
            ...placementLabels(s),
          },
        },
        spec: {
          // Only a plane with a live ConfigMap talks to the API (its own narrow Role); no other machine.
          ...(s.liveCommandsConfigMap
            ? { serviceAccountName: liveReaderName(s.name), automountServiceAccountToken: true }
            : { automountServiceAccountToken: false }),
          enableServiceLinks: false,
          terminationGracePeriodSeconds: 0, // no ACPI: the machine has nothing to shut down
          securityContext: restrictedPodSecurity({
            user: RENDER_LIMITS.uid,
            group: RENDER_LIMITS.uid,
            fsGroup: RENDER_LIMITS.uid,
          }),
          ...placement(s),
          volumes: [
            { name: 'status', emptyDir: { medium: 'Memory', sizeLimit: RENDER_LIMITS.statusVolume } },
          ],
          initContainers: [
            {
              name: 'seed',
              image: seedImage,
              // Seeded once: a disk already on the volume keeps its files (and Kube's store).
              command: [
                'sh',
                '-c',
                'test -s /disk/oberon.dsk || { node /app/operator/src/cli/main.ts disk build-kube --out /disk/.oberon.dsk.tmp && mv /disk/.oberon.dsk.tmp /disk/oberon.dsk; }',
              ],
              volumeMounts: [{ name: 'disk', mountPath: '/disk' }],
              securityContext: restrictedContainerSecurity({ readOnlyRoot: false }),
            },
          ],
          containers: [
            {
              name: 'machine',
              image,
              args,
              ...(env.length ? { env } : {}), // the API server drops an empty list: [] would never match
              ports: [{ name: 'vnc', containerPort: RENDER_LIMITS.vncPort, protocol: 'TCP' }],
              // The emulator's own word (machine run --status-file): not ready while it boots or is in
              // trouble, and the kubelet's Unhealthy event carries its words into status.events.
              readinessProbe: {
                exec: { command: ['sh', '-c', PROBE_SCRIPT] },
                initialDelaySeconds: RENDER_LIMITS.probeDelaySeconds,
                periodSeconds: RENDER_LIMITS.probePeriodSeconds,
              },
              resources: { requests: { memory: s.memory }, limits: { memory: s.memory } },
              volumeMounts: [
                { name: 'disk', mountPath: '/disk' },
                { name: 'status', mountPath: STATUS_DIR },
              ],
              securityContext: restrictedContainerSecurity({ readOnlyRoot: true }),
            },
          ],
        },
      },
    },
  };
  const service: KubeObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(owner, s, name, 'machine'),
    spec: {
      type: 'ClusterIP',
      selector: selectorLabels(s),
      ports: [{ name: 'vnc', port: RENDER_LIMITS.vncPort, targetPort: 'vnc', protocol: 'TCP' }],
    },
  };
  return { statefulSet, service };
}

// --- runtime kubevirt -----------------------------------------------------------------------------

/**
 * The machine descriptor (the catalog's passport shape, `image` left out so releases don't restart
 * VMs). The files' `source` paths are the passport's (informational; the hook reads only `name` and
 * `qemuArgs`): our fill Job writes them with `retrokube machine payload`.
 */
export function descriptor(s: MachineSettings): Record<string, unknown> {
  const text = bootText(s, KEY_PLACEHOLDER_VM);
  return {
    apiVersion: 'paleocomputing.io/v1alpha1',
    kind: 'Machine',
    name: 'oberon',
    domain: {
      arch: 'risc5',
      machine: 'oberon',
      emulator: '/usr/local/bin/qemu-system-risc5',
      vcpus: 1,
      graphics: 'vnc',
      terminationGracePeriodSeconds: 0,
    },
    payload: {
      path: '/payload',
      files: [
        {
          name: 'prom.bin',
          source: '/opt/oberon/payload/prom.bin',
          role: 'firmware',
          qemuArgs: ['-bios', '{path}'],
        },
        {
          name: 'oberon.dsk',
          source: '/opt/oberon/payload/oberon.dsk',
          role: 'disk',
          size: PAYLOAD_LIMITS.diskBytes,
          qemuArgs: ['-drive', 'if=none,id=sd0,file={path},format=raw'],
        },
      ],
    },
    variants: { base: {} },
    variant: 'base',
    ...(s.air ? { air: { host: relayHost(s.air), port: RENDER_LIMITS.airPort } } : {}),
    ...(text ? { commands: { text } } : {}),
  };
}

/**
 * The fill container's arguments: `retrokube machine payload` of the product image (the boot ROM
 * and the Kube disk the pod runtime seeds from; machine/payload.ts) onto the machine's volume.
 */
export function fillArgs(hasKey: boolean): string[] {
  return ['machine', 'payload', '/payload', ...(hasKey ? ['--key-file', '/key/key'] : [])];
}

/** `image`: the operator's own (product) image; `disk.image` overrides it (another build of ours). */
export function renderKubeVirt(
  owner: KubeObject,
  s: MachineSettings,
  image: string,
  opts: { seeded: boolean; held?: boolean },
): { configMap: KubeObject; pvc: KubeObject; job: KubeObject; vm: KubeObject } {
  const name = machineChild(s.name);
  const hookName = `${name}-hook`;
  const pvcName = `${name}-disk`;
  const configMap: KubeObject = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: meta(owner, s, hookName, 'hook'),
    data: { onDefineDomain: HOOK_SCRIPT },
  };
  const pvc: KubeObject = {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: meta(owner, s, pvcName, 'disk'),
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: s.diskSize } },
      ...(s.storageClass ? { storageClassName: s.storageClass } : {}),
    },
  };
  const fillImage = s.diskImage ?? image;
  const jobPod = {
    restartPolicy: 'OnFailure',
    automountServiceAccountToken: false,
    enableServiceLinks: false,
    securityContext: restrictedPodSecurity({
      user: RENDER_LIMITS.fillUid,
      group: RENDER_LIMITS.qemuGid,
      fsGroup: RENDER_LIMITS.qemuGid,
    }),
    // Soft: near the launcher pod when it runs (a required rule deadlocked in the catalog).
    affinity: {
      podAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: 100,
            podAffinityTerm: {
              labelSelector: { matchLabels: { 'kubevirt.io/domain': name } },
              topologyKey: 'kubernetes.io/hostname',
            },
          },
        ],
      },
    },
    containers: [
      {
        name: 'fill',
        image: fillImage,
        args: fillArgs(!!s.keySecretRef),
        volumeMounts: [
          { name: 'payload', mountPath: '/payload' },
          ...(s.keySecretRef ? [{ name: 'key', mountPath: '/key', readOnly: true }] : []),
        ],
        securityContext: restrictedContainerSecurity({ readOnlyRoot: true }),
      },
    ],
    volumes: [
      { name: 'payload', persistentVolumeClaim: { claimName: pvcName } },
      ...(s.keySecretRef
        ? [
            {
              name: 'key',
              secret: {
                secretName: s.keySecretRef.name,
                defaultMode: 0o440,
                items: [{ key: s.keySecretRef.key, path: 'key' }],
              },
            },
          ]
        : []),
    ],
  };
  // Job templates are immutable: a changed spec is a new Job (its hash in the name).
  const job: KubeObject = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: meta(owner, s, `${name}-fill-${hashOf(jobPod).slice(0, 8)}`, 'fill'),
    spec: {
      backoffLimit: RENDER_LIMITS.fillBackoffLimit,
      activeDeadlineSeconds: RENDER_LIMITS.fillDeadlineSeconds,
      ttlSecondsAfterFinished: RENDER_LIMITS.fillTtlSeconds,
      template: { metadata: { labels: labels(s, 'fill') }, spec: jobPod },
    },
  };
  const vmLabels = {
    ...selectorLabels(s),
    'app.kubernetes.io/component': 'machine',
    'app.kubernetes.io/managed-by': MANAGED_BY,
    ...placementLabels(s),
  };
  const vm: KubeObject = {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: meta(owner, s, name, 'machine'),
    spec: {
      // Halted until the volume holds the machine's files (the hook would refuse and KubeVirt back
      // off) and while held for the relay's endpoint.
      runStrategy: s.running && opts.seeded && !opts.held ? 'Always' : 'Halted',
      template: {
        metadata: {
          labels: vmLabels,
          annotations: {
            [DESCRIPTOR_ANNOTATION]: JSON.stringify(descriptor(s)),
            'hooks.kubevirt.io/hookSidecars': JSON.stringify([
              {
                // v1alpha3: the shim also takes KubeVirt's Shutdown call, so it ends with the VM;
                // under v1alpha2 it outlived a launcher whose QEMU had exited, the pod never
                // finished and the VMI sat in Scheduled instead of failing and being restarted.
                args: ['--version', 'v1alpha3'],
                configMap: { name: hookName, key: 'onDefineDomain', hookPath: '/usr/bin/onDefineDomain' },
                pvc: { name: pvcName, volumePath: '/payload', sharedComputePath: '/payload' },
              },
            ]),
          },
        },
        spec: {
          evictionStrategy: 'None', // a foreign machine cannot migrate; LiveMigrate would block drains
          terminationGracePeriodSeconds: 0,
          ...placement(s),
          domain: {
            // KubeVirt schedules a VMI only to nodes labelled with its machine type (our launcher's
            // libvirt lists the RISC5 board as oberon) and admits only types its CR allows.
            machine: { type: KUBEVIRT_MACHINE_TYPE },
            resources: { requests: { memory: s.memory } },
            devices: { autoattachPodInterface: false },
          },
          volumes: [],
        },
      },
    },
  };
  return { configMap, pvc, job, vm };
}
