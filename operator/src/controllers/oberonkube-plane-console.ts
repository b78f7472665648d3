// The kubevirt plane's live deployments: the runtime's equivalent of the pod runtime's live
// ConfigMap. A VM has no kubelet volume to follow, so the operator sends the plane the whole desired
// state — one `Kube.Apply name N Module` line per deployment — through KubeVirt's serial console
// (kubevirt-console.ts), which our hook wires to the port Oberon's Boot keeps reading. Level-
// triggered: the lines go again whenever they differ from what this operator last sent to that VMI
// (a new VMI, after a restart, boots without them; a new operator sends them once more, and Apply
// of an unchanged deployment changes nothing). Status says a change arrived only from the air.
import { liveApplyLines } from '../api/oberonkube-boot.ts';
import type { KubeObject, ResourceType } from '../runtime/client.ts';
import type { ReconcileContext } from '../runtime/controller.ts';
import { logger } from '../util/log.ts';
import { sendToSerialConsole } from './kubevirt-console.ts';
import type { KubeSettings, OberonKube } from './oberonkube-render.ts';
import { machineChild } from './oberonmachine-render.ts';

export const PLANE_CONSOLE_LIMITS = {
  recheckMs: 10_000, // how often an unchanged plane's VMI is looked at again (a restart gives a new uid)
  retryMs: 10_000, // after a failed send (virt-handler busy, VMI just starting)
} as const;

export const VMI: ResourceType = {
  group: 'kubevirt.io',
  version: 'v1',
  plural: 'virtualmachineinstances',
  kind: 'VirtualMachineInstance',
  namespaced: true,
};

interface Sent {
  vmiUid: string;
  text: string;
  checkedAtMs: number;
  failedAtMs: number;
  lastError: string;
}

const log = logger('plane-console');

export class PlaneConsole {
  private readonly sent = new Map<string, Sent>();

  forget(id: string): void {
    this.sent.delete(id);
  }

  /** Sends the plane its deployment lines when its running VMI does not have them from us yet. */
  async sync(
    ctx: ReconcileContext,
    k: OberonKube,
    s: KubeSettings,
    id: string,
    nowMs = Date.now(),
  ): Promise<void> {
    const text = liveApplyLines(s.deployments);
    const last = this.sent.get(id);
    if (last?.text === text && nowMs - last.checkedAtMs < PLANE_CONSOLE_LIMITS.recheckMs) return;
    if (last?.failedAtMs && nowMs - last.failedAtMs < PLANE_CONSOLE_LIMITS.retryMs) return;
    const vmiName = machineChild(`${s.name}-plane`);
    const entry: Sent = last ?? { vmiUid: '', text: '', checkedAtMs: 0, failedAtMs: 0, lastError: '' };
    try {
      const vmi = await ctx.client.getOrUndefined<KubeObject & { status?: { phase?: string } }>(
        VMI,
        s.namespace,
        vmiName,
      );
      const uid = vmi?.metadata.uid as string | undefined;
      if (!uid || vmi?.status?.phase !== 'Running') return; // not running yet: looked at again next pass
      if (entry.vmiUid === uid && entry.text === text) {
        this.sent.set(id, { ...entry, checkedAtMs: nowMs });
        return;
      }
      await sendToSerialConsole(ctx.client, s.namespace, vmiName, text);
      this.sent.set(id, { vmiUid: uid, text, checkedAtMs: nowMs, failedAtMs: 0, lastError: '' });
      const lines = text.split('\n').filter(Boolean).length;
      log.info(
        { kube: id, vmi: vmiName, vmiUid: uid, lines },
        'Sent the deployments to the plane through its serial console',
      );
      void ctx.recorder.record(
        k,
        'Normal',
        'DeploymentsSent',
        `Sent ${lines} deployment line(s) to the plane VM ${vmiName} through its serial console`,
      );
    } catch (err) {
      const why = (err as Error).message;
      this.sent.set(id, { ...entry, failedAtMs: nowMs, lastError: why });
      log.warn({ kube: id, vmi: vmiName, err: why }, 'Could not send the deployments to the plane');
      if (entry.lastError !== why)
        void ctx.recorder.record(
          k,
          'Warning',
          'DeploymentsNotSent',
          `The plane VM ${vmiName} did not get its deployments through its serial console (retrying every ${PLANE_CONSOLE_LIMITS.retryMs / 1000} s): ${why}`,
        );
    }
  }
}
