// OberonMachine: one RISC5 Oberon machine on a disk of its own, run either as a KubeVirt
// VirtualMachine (QEMU's risc5 target through the paleocomputing launcher) or as a plain pod
// running our emulator (`retrokube machine run`). Its boot commands come from its role
// (plane/node) and the extra `commands` (kube-on-oberon spec §6).
import { type Static, Type } from '@sinclair/typebox';
import {
  CLUSTER_PATTERN,
  MACHINE_DEFAULTS,
  MACHINE_LIMITS,
  NODE_NAME_PATTERN,
} from './oberonmachine-limits.ts';
import { Placement } from './placement.ts';
import { CommonStatus, type KindDefinition } from './schema.ts';

export {
  CLUSTER_PATTERN,
  KEY_PATTERN,
  MACHINE_DEFAULTS,
  MACHINE_LIMITS,
  NODE_NAME_PATTERN,
} from './oberonmachine-limits.ts';

/** A reference to one entry of a Secret in the same namespace (`key` defaults to `defaultKey`). */
export function secretEntryRef(defaultKey: string, entry: string, description: string) {
  return Type.Object(
    {
      name: Type.String({
        minLength: 1,
        maxLength: 253,
        pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
        description: 'Secret in the same namespace.',
      }),
      key: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 253,
          pattern: '^[-._a-zA-Z0-9]+$',
          default: defaultKey,
          description: `Entry of the Secret holding ${entry} (default "${defaultKey}").`,
        }),
      ),
    },
    { description },
  );
}

export const KeySecretRef = secretEntryRef(
  'key',
  '0–16 hex digits',
  'The KubeNet key (0–16 hex digits, checked before use) in a Secret; absent = the all-zero key. Whoever may create this resource can have that Secret entry handed to a machine: treat that right like reading the Secret.',
);

export const OberonMachineSpec = Type.Object(
  {
    air: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 56,
        pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$',
        description: 'Name of the OberonAir (same namespace) the radio joins; absent = no radio.',
      }),
    ),
    role: Type.Optional(
      Type.Union([Type.Literal('plane'), Type.Literal('node'), Type.Literal('standalone')], {
        default: MACHINE_DEFAULTS.role,
        description: 'plane: Kube.Start;KubeNet.Serve; node: KubeNet.Join; standalone: only `commands`.',
      }),
    ),
    nodeName: Type.Optional(
      Type.String({
        pattern: NODE_NAME_PATTERN,
        description: 'Node name on the air (≤ 6); required for role node.',
      }),
    ),
    cluster: Type.Optional(
      Type.String({
        pattern: CLUSTER_PATTERN,
        default: MACHINE_DEFAULTS.cluster,
        description: 'KubeNet cluster (≤ 8).',
      }),
    ),
    keySecretRef: Type.Optional(KeySecretRef),
    commands: Type.Optional(
      Type.String({
        maxLength: MACHINE_LIMITS.bootChars,
        pattern: '^[ -~]*$',
        description: "Extra boot commands, `;`-separated, run after the role's (printable ASCII).",
      }),
    ),
    liveCommandsConfigMap: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 253,
        pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
        description:
          'pod runtime: a ConfigMap whose `deployments` entry holds `Kube.Apply name N Module` lines; the running machine sends each new or changed line to its serial port (a live change, no restart).',
      }),
    ),
    runtime: Type.Optional(
      Type.Union([Type.Literal('pod'), Type.Literal('kubevirt')], {
        default: MACHINE_DEFAULTS.runtime,
        description: 'pod: our emulator in a StatefulSet; kubevirt: a VirtualMachine on the RISC5 launcher.',
      }),
    ),
    memory: Type.Optional(
      Type.String({
        pattern: '^[0-9]+(Mi|Gi)$',
        default: MACHINE_DEFAULTS.memory,
        description: 'Memory request (128Mi–1Gi, Mi or Gi).',
      }),
    ),
    disk: Type.Optional(
      Type.Object(
        {
          size: Type.Optional(
            Type.String({
              pattern: '^[0-9]+(Mi|Gi)$',
              default: MACHINE_DEFAULTS.diskSize,
              description: 'PVC size.',
            }),
          ),
          storageClass: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: 253,
              description: 'StorageClass of the PVC; default: the cluster default.',
            }),
          ),
          image: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: 512,
              pattern: '^[A-Za-z0-9][A-Za-z0-9._/:@-]*$',
              description:
                "Image the disk (and for kubevirt the boot ROM) is seeded from: a retrokube image; default the operator's own.",
            }),
          ),
        },
        {
          default: {},
          description: "The machine's disk: a PVC of its own, seeded once, kept across restarts.",
        },
      ),
    ),
    vnc: Type.Optional(
      Type.Object(
        {
          expose: Type.Optional(
            Type.Boolean({
              default: false,
              description:
                'Pod runtime: serve VNC on the pod address (reachable through the Service, and by anyone the NetworkPolicy lets in). Default: loopback only, reached with `kubectl port-forward`.',
            }),
          ),
          passwordSecretRef: Type.Optional(
            secretEntryRef(
              'password',
              'the password: 1-8 printable ASCII characters',
              'Pod runtime: VNC viewers must give this password (RFB VNC Authentication). The kubelet reads the Secret for the machine; the operator never does.',
            ),
          ),
        },
        {
          description: 'How the screen is served. VNC carries the screen, mouse and keyboard of the machine.',
        },
      ),
    ),
    running: Type.Optional(
      Type.Boolean({ default: true, description: 'false halts the machine, keeping its disk.' }),
    ),
    placement: Type.Optional(Placement),
  },
  {
    description: 'Desired state of the machine.',
    'x-kubernetes-validations': [
      {
        rule: "!has(self.role) || self.role != 'node' || has(self.nodeName)",
        message: 'role node needs nodeName (≤ 6 of a-z, 0-9, -)',
      },
      {
        rule: "!has(self.role) || self.role == 'standalone' || has(self.air)",
        message: 'role plane or node needs air (the OberonAir to join)',
      },
      {
        // #28.11: a screen that accepts input is never served beyond the pod without a password.
        rule: '!has(self.vnc) || !has(self.vnc.expose) || !self.vnc.expose || has(self.vnc.passwordSecretRef)',
        message:
          'vnc.expose needs vnc.passwordSecretRef: anyone who reaches the pod address could type into the machine',
      },
      {
        rule: "!has(self.memory) || (quantity(self.memory).compareTo(quantity('128Mi')) >= 0 && quantity(self.memory).compareTo(quantity('1Gi')) <= 0)",
        message: 'memory must be 128Mi to 1Gi',
      },
      {
        // The role's own commands with a 16-digit key, plus `;` and the extra commands, fit Boot's 240.
        rule:
          "(!has(self.role) ? 0 : self.role == 'plane' ? 42 + (has(self.cluster) ? size(self.cluster) : 4) : " +
          "self.role == 'node' && has(self.nodeName) ? 31 + size(self.nodeName) + (has(self.cluster) ? size(self.cluster) : 4) : 0)" +
          ' + (has(self.commands) ? size(self.commands) + 1 : 0) <= 240',
        message: 'boot commands (role commands with a 16-digit key plus commands) exceed 240 characters',
      },
    ],
  },
);

export const OberonMachineStatus = Type.Object(
  {
    ...CommonStatus,
    phase: Type.Optional(
      Type.String({
        description:
          'Pending (held until the relay has an endpoint), Seeding, Starting, Running, Halted or Failed.',
      }),
    ),
    ready: Type.Optional(Type.Boolean({ description: 'The VM or pod reports Ready.' })),
    lastBoot: Type.Optional(
      Type.String({
        format: 'date-time',
        description:
          "When the machine last booted as observed: the kubelet's Started event of the machine container (pod) or the VMI's Ready/Started (kubevirt).",
      }),
    ),
    vnc: Type.Optional(
      Type.String({ description: 'Where the screen is served (pod runtime): <service>:<port>.' }),
    ),
    message: Type.Optional(
      Type.String({ description: 'Latest word from the hook, the launcher or the emulator.' }),
    ),
    events: Type.Optional(
      Type.Array(
        Type.Object({
          object: Type.String({
            description: 'What the event is about: Pod/<name>, VirtualMachineInstance/<name>, ...',
          }),
          type: Type.String({ description: 'Normal or Warning.' }),
          reason: Type.String(),
          message: Type.String({ maxLength: 256 }),
          count: Type.Integer({ minimum: 1 }),
          lastTimestamp: Type.String({ format: 'date-time' }),
        }),
        {
          maxItems: 5,
          description:
            'The last few Kubernetes Events about the machine pod, its StatefulSet, the VirtualMachine or its instance (kubelet, KubeVirt, our hook), newest first.',
        },
      ),
    ),
  },
  { description: 'Observed state of the machine.' },
);

export type OberonMachineSpecT = Static<typeof OberonMachineSpec>;
export type OberonMachineStatusT = Static<typeof OberonMachineStatus>;

export const OberonMachineKind: KindDefinition = {
  kind: 'OberonMachine',
  plural: 'oberonmachines',
  singular: 'oberonmachine',
  // Cozystack serves OberonVM in apps.cozystack.io; our own short name keeps kubectl unambiguous.
  shortNames: ['rkm'],
  categories: ['retrokube'],
  description:
    'One RISC5 Oberon machine with its own disk: a KubeVirt VirtualMachine or a pod running the emulator.',
  spec: OberonMachineSpec,
  status: OberonMachineStatus,
  printerColumns: [
    { name: 'Role', type: 'string', jsonPath: '.spec.role' },
    { name: 'Runtime', type: 'string', jsonPath: '.spec.runtime' },
    { name: 'Air', type: 'string', jsonPath: '.spec.air' },
    { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
    { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
  validations: [
    {
      rule: `size(self.metadata.name) <= ${MACHINE_LIMITS.nameChars}`,
      message: `metadata.name must be at most ${MACHINE_LIMITS.nameChars} characters (children are rk-m-<name>-...)`,
    },
    {
      rule: "self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",
      message: 'metadata.name may contain only a-z, 0-9 and - (it names a StatefulSet, a VM and a Service)',
    },
  ],
  source: 'operator/src/api/oberonmachine.ts',
};
