import { describe, expect, it } from 'vitest';
import {
  type CustomizePatch,
  isOurPatch,
  LAUNCHER_COMPONENT,
  type LauncherInputs,
  launcherPatch,
  machinesWithOberon,
  planLauncher,
} from './launcher-plan.ts';

const V = 'v1.8.4';
const IMAGE = `ghcr.io/retrokube/virt-launcher:${V}-risc5-0.1.0`;
const STOCK = `quay.io/kubevirt/virt-launcher:${V}`;
const FOREIGN: CustomizePatch = {
  resourceType: 'Deployment',
  resourceName: 'virt-api',
  type: 'strategic',
  patch: '{"metadata":{"labels":{"x":"y"}}}',
};

function inputs(over: Partial<LauncherInputs['kubevirt']> = {}, args1 = STOCK): LauncherInputs {
  return {
    kubevirt: {
      deleting: false,
      observedVersion: V,
      targetVersion: V,
      workloadUpdateMethods: [],
      annotations: {},
      patches: [FOREIGN],
      emulatedMachines: ['q35*', 'oberon'],
      ...over,
    },
    controller: {
      name: 'virt-controller',
      image: `quay.io/kubevirt/virt-controller:${V}`,
      args: ['--launcher-image', args1],
    },
    table: { [V]: IMAGE },
    allowWorkloadUpdate: false,
  };
}

describe('the launcher component plan', () => {
  it('adds its one entry after the others, then reports Rolling, then Applied, and writes nothing when steady', () => {
    const first = planLauncher(inputs());
    expect(first.state).toBe('Applying');
    expect(first.patches).toEqual([FOREIGN, launcherPatch(IMAGE)]);
    const rolling = planLauncher(inputs({ patches: first.patches }));
    expect(rolling.state).toBe('Rolling');
    expect(rolling.patches).toBeUndefined();
    const applied = planLauncher(inputs({ patches: first.patches }, IMAGE));
    expect(applied).toMatchObject({ state: 'Applied', image: IMAGE });
    expect(applied.patches).toBeUndefined();
  });

  it('its entry tests the container name and the flag before replacing the flag value', () => {
    const ops = JSON.parse(launcherPatch(IMAGE).patch);
    expect(ops.map((o: { op: string }) => o.op)).toEqual(['test', 'test', 'replace']);
    expect(ops[2]).toEqual({ op: 'replace', path: '/spec/template/spec/containers/0/args/1', value: IMAGE });
    expect(isOurPatch(launcherPatch('other:1'))).toBe(true);
    expect(isOurPatch(FOREIGN)).toBe(false);
  });

  it('replaces an entry of an older image in place', () => {
    const old = launcherPatch('ghcr.io/retrokube/virt-launcher:v1.8.3-risc5-0.0.9');
    const p = planLauncher(inputs({ patches: [old, FOREIGN] }));
    expect(p.state).toBe('Applying');
    expect(p.patches).toEqual([launcherPatch(IMAGE), FOREIGN]);
  });

  it('in doubt, or for a version not in the table, removes only its own entry', () => {
    const mine = [FOREIGN, launcherPatch(IMAGE)];
    const cases: Array<[Partial<LauncherInputs['kubevirt']>, string]> = [
      [{ deleting: true }, 'Doubt'],
      [{ targetVersion: 'v1.9.0' }, 'Doubt'],
      [{ observedVersion: 'v1.7.0', targetVersion: 'v1.7.0' }, 'Doubt'], // controller image is v1.8.4
    ];
    for (const [over, state] of cases) {
      const p = planLauncher(inputs({ ...over, patches: mine }));
      expect(p.state).toBe(state);
      expect(p.patches).toEqual([FOREIGN]);
    }
    const unsupported = { ...inputs({ patches: mine }), table: {} };
    expect(planLauncher(unsupported)).toMatchObject({ state: 'Unsupported', patches: [FOREIGN] });
    const noController = { ...inputs({ patches: mine }), controller: undefined };
    expect(planLauncher(noController)).toMatchObject({ state: 'Doubt', patches: [FOREIGN] });
    // Nothing of ours there: nothing to write.
    expect(planLauncher(inputs({ deleting: true })).patches).toBeUndefined();
  });

  it("someone else's patch of virt-controller's arguments is a Conflict: no write", () => {
    const theirs: CustomizePatch = {
      resourceType: 'Deployment',
      resourceName: 'virt-controller',
      type: 'json',
      patch: '[{"op":"replace","path":"/spec/template/spec/containers/0/args/1","value":"x"}]',
    };
    const conflict = planLauncher(inputs({ patches: [theirs] }));
    expect(conflict.state).toBe('Conflict');
    expect(conflict.patches).toBeUndefined();
  });

  it('asks for consent before a switch that would move every VM; removing never waits', () => {
    const moving = { workloadUpdateMethods: ['LiveMigrate', 'Evict'] };
    const asked = planLauncher(inputs(moving));
    expect(asked.state).toBe('NeedsConsent');
    expect(asked.patches).toBeUndefined();
    expect(asked.reason).toContain(LAUNCHER_COMPONENT.consentAnnotation);
    const byAnnotation = planLauncher(
      inputs({ ...moving, annotations: { [LAUNCHER_COMPONENT.consentAnnotation]: 'true' } }),
    );
    expect(byAnnotation.state).toBe('Applying');
    expect(planLauncher({ ...inputs(moving), allowWorkloadUpdate: true }).state).toBe('Applying');
    const removing = planLauncher(inputs({ ...moving, deleting: true, patches: [launcherPatch(IMAGE)] }));
    expect(removing).toMatchObject({ state: 'Doubt', patches: [] });
  });

  it('allows KubeVirt to admit our machine type, keeping every type already there, once', () => {
    expect(machinesWithOberon(undefined)).toEqual(['q35*', 'pc-q35*', 'oberon']);
    expect(machinesWithOberon(['q35*'])).toEqual(['q35*', 'oberon']);
    expect(machinesWithOberon(['oberon', 'q35*'])).toBeUndefined();
    // Switching the launcher writes both; once the entry is there, a missing type is added alone.
    const first = planLauncher(inputs({ emulatedMachines: undefined }));
    expect(first).toMatchObject({ state: 'Applying', emulatedMachines: ['q35*', 'pc-q35*', 'oberon'] });
    const entryOnly = planLauncher(inputs({ patches: first.patches, emulatedMachines: ['pc-q35*'] }, IMAGE));
    expect(entryOnly).toMatchObject({ state: 'Applying', emulatedMachines: ['pc-q35*', 'oberon'] });
    expect(entryOnly.patches).toBeUndefined();
    expect(planLauncher(inputs({ patches: first.patches }, IMAGE)).emulatedMachines).toBeUndefined();
  });
});
