// The RISC5 launcher component's decision (qemu-kubevirt spec §2.1 item 3, §2.2), pure: from the
// KubeVirt CR, virt-controller and the table of launcher images per KubeVirt version, the
// KubeVirt CR's customizeComponents patches it wants and the state it reports. It owns exactly
// one patch entry (the three-operation JSON patch of virt-controller's --launcher-image) and keeps
// everyone else's entries in order. In any doubt it removes its entry: KubeVirt then runs its
// stock launcher, which never breaks ordinary VMs.

export const LAUNCHER_LOOP_LIMITS = {
  intervalMs: 30_000, // the reference's INTERVAL: the launcher changes with KubeVirt upgrades, rarely
  tableLines: 256, // KubeVirt versions in the table; far above the few a release supports
  fieldManager: 'retrokube-launcher',
} as const;

export const LAUNCHER_COMPONENT = {
  statusConfigMap: 'kubevirt-paleo-launcher-status', // what OberonMachine's LauncherReady reads
  consentAnnotation: 'paleocomputing.io/allow-workload-update',
  controller: 'virt-controller',
} as const;

/** The machine type our VMs name (the RISC5 board our launcher's libvirt lists). KubeVirt admits a
 * VMI only with a type its CR's emulatedMachines allow, so the component adds this one for amd64
 * nodes (the architecture our launcher image is built for), keeping every type already there. */
export const KUBEVIRT_MACHINE_TYPE = 'oberon';
/** KubeVirt's own amd64 list when the CR names none (v1.8: pkg/virt-config defaults). */
export const KUBEVIRT_DEFAULT_AMD64_MACHINES = ['q35*', 'pc-q35*'] as const;

/** The CR's amd64 emulatedMachines with our machine type added; undefined when it is already allowed. */
export function machinesWithOberon(current: string[] | undefined): string[] | undefined {
  const list = current ?? [...KUBEVIRT_DEFAULT_AMD64_MACHINES];
  return list.includes(KUBEVIRT_MACHINE_TYPE) ? undefined : [...list, KUBEVIRT_MACHINE_TYPE];
}

export type LauncherStateName =
  | 'Applied' // our entry is in place and virt-controller runs with it
  | 'Applying' // we write our entry now
  | 'Rolling' // our entry is in place; virt-controller has not rolled out with it yet
  | 'NeedsConsent' // the switch would live-migrate or evict every VM: a person must allow it
  | 'Unsupported' // this KubeVirt version has no launcher in the table
  | 'Doubt' // KubeVirt is changing or not as expected: stock launcher
  | 'Conflict' // someone else's patch already sets the launcher: we write nothing
  | 'Removed'; // our entry is gone (or was never there) and nothing else is wanted

export interface CustomizePatch {
  resourceType: string;
  resourceName: string;
  type: string;
  patch: string;
}

export interface LauncherInputs {
  kubevirt: {
    deleting: boolean;
    observedVersion: string;
    targetVersion: string;
    workloadUpdateMethods: string[];
    annotations: Record<string, string>;
    patches: CustomizePatch[];
    /** spec.configuration.architectureConfiguration.amd64.emulatedMachines (undefined: unset). */
    emulatedMachines?: string[];
  };
  /** virt-controller's first container (undefined when the Deployment is missing). */
  controller?: { name: string; image: string; args: string[] };
  /** KubeVirt version → launcher image. */
  table: Record<string, string>;
  allowWorkloadUpdate: boolean;
}

export interface LauncherPlan {
  state: LauncherStateName;
  reason: string;
  image?: string;
  /** The CR's new customizeComponents.patches, when a write is needed; undefined: write nothing. */
  patches?: CustomizePatch[];
  /** The CR's new amd64 emulatedMachines, when our machine type must be added; undefined: unchanged. */
  emulatedMachines?: string[];
}

/** Our entry for an image: test the container and the flag, then replace the flag's value. */
export function launcherPatch(image: string): CustomizePatch {
  return {
    resourceType: 'Deployment',
    resourceName: LAUNCHER_COMPONENT.controller,
    type: 'json',
    patch: JSON.stringify([
      { op: 'test', path: '/spec/template/spec/containers/0/name', value: LAUNCHER_COMPONENT.controller },
      { op: 'test', path: '/spec/template/spec/containers/0/args/0', value: '--launcher-image' },
      { op: 'replace', path: '/spec/template/spec/containers/0/args/1', value: image },
    ]),
  };
}

/** Ours: exactly the three-operation shape launcherPatch makes (any image). */
export function isOurPatch(p: CustomizePatch): boolean {
  if (
    p.resourceType !== 'Deployment' ||
    p.resourceName !== LAUNCHER_COMPONENT.controller ||
    p.type !== 'json'
  )
    return false;
  try {
    const ops = JSON.parse(p.patch) as Array<{ op?: string; value?: unknown }>;
    const image = ops[2]?.value;
    return typeof image === 'string' && p.patch === launcherPatch(image).patch;
  } catch {
    return false;
  }
}

/** Someone else's entry that changes virt-controller's arguments (and so maybe the launcher). */
function touchesLauncher(p: CustomizePatch): boolean {
  return p.resourceName === LAUNCHER_COMPONENT.controller && !isOurPatch(p) && p.patch.includes('/args');
}

const tagOf = (ref: string): string => {
  const noDigest = ref.split('@')[0] ?? '';
  const slash = noDigest.lastIndexOf('/');
  const colon = noDigest.lastIndexOf(':');
  return colon > slash ? noDigest.slice(colon + 1) : '';
};

export function planLauncher(i: LauncherInputs): LauncherPlan {
  const kv = i.kubevirt;
  const ours = kv.patches.filter(isOurPatch);
  const others = kv.patches.filter((p) => !isOurPatch(p));
  const remove = (state: LauncherStateName, reason: string): LauncherPlan =>
    ours.length > 0 ? { state, reason, patches: others } : { state, reason };

  if (kv.deleting) return remove('Doubt', 'the KubeVirt CR is being deleted');
  if (!kv.observedVersion || kv.observedVersion !== kv.targetVersion)
    return remove(
      'Doubt',
      `KubeVirt is not settled (observed ${kv.observedVersion || 'none'}, target ${kv.targetVersion || 'none'})`,
    );
  const c = i.controller;
  if (!c) return remove('Doubt', 'virt-controller is missing');
  if (c.name !== LAUNCHER_COMPONENT.controller || c.args[0] !== '--launcher-image')
    return remove('Doubt', "virt-controller's first container does not take --launcher-image first");
  if (tagOf(c.image) !== kv.observedVersion)
    return remove('Doubt', `virt-controller's image ${c.image} is not of KubeVirt ${kv.observedVersion}`);
  const image = i.table[kv.observedVersion];
  if (!image)
    return remove('Unsupported', `no RISC5 launcher for KubeVirt ${kv.observedVersion} in the table`);
  if (others.some(touchesLauncher))
    return {
      state: 'Conflict',
      reason: "another customizeComponents patch changes virt-controller's arguments",
    };

  const wanted = launcherPatch(image);
  const emulatedMachines = machinesWithOberon(kv.emulatedMachines);
  if (ours.length === 1 && ours[0]?.patch === wanted.patch) {
    if (emulatedMachines)
      return {
        state: 'Applying',
        reason: `allowing the machine type ${KUBEVIRT_MACHINE_TYPE} in the KubeVirt CR (emulatedMachines)`,
        image,
        emulatedMachines,
      };
    return c.args[1] === image
      ? { state: 'Applied', reason: `virt-controller runs launcher ${image}`, image }
      : { state: 'Rolling', reason: `virt-controller has not rolled out launcher ${image} yet`, image };
  }
  const consent = i.allowWorkloadUpdate || kv.annotations[LAUNCHER_COMPONENT.consentAnnotation] === 'true';
  if (kv.workloadUpdateMethods.length > 0 && !consent)
    return {
      state: 'NeedsConsent',
      reason: `workloadUpdateMethods ${kv.workloadUpdateMethods.join(',')} would move every VM when the launcher changes; allow it with allowWorkloadUpdate or the annotation ${LAUNCHER_COMPONENT.consentAnnotation}=true`,
      image,
    };
  // Our entry where it was (or last), everyone else's in their order.
  const at = kv.patches.findIndex(isOurPatch);
  const patches = [...others];
  patches.splice(at < 0 ? patches.length : Math.min(at, patches.length), 0, wanted);
  return {
    state: 'Applying',
    reason: `switching virt-controller to launcher ${image}`,
    image,
    patches,
    emulatedMachines,
  };
}
