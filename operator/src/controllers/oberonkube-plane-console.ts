// The kubevirt plane's live deployments: the runtime's equivalent of the pod runtime's live
// ConfigMap. A VM has no kubelet volume to follow, so the operator sends the plane the whole desired
// state — one `Kube.Apply name N Module` line per deployment — through KubeVirt's serial console
// (kubevirt-console.ts), which our hook wires to the port Oberon's Boot keeps reading. Level-
// triggered: the lines go again whenever they differ from what this operator last sent to that VMI
// (a new VMI, after a restart, boots without them; a new operator sends them once more, and Apply
// of an unchanged deployment changes nothing), and again when the air says the plane, heard, still
// does not run them a while after they were sent (the lines may never have reached it: a send only
// proves they left the operator). Status says a change arrived only from the air.
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
  // The same lines again when the plane is heard but not running them this long after they went:
  // a rollout of 6 pods on kubevirt planes under TCG took 10 s in the real-node test, and a lost
  // send must not leave a cluster without its deployments. Again is harmless: Kube.Apply sets the
  // replicas and image a deployment already has.
  resendMs: 60_000,
} as const;

/** What the air says of the plane, for the decision to send the lines again. */
export interface PlaneHeard {
  /** The plane's messages are heard on the air. */
  heard: boolean;
  /**
   * The air shows the plane has the lines: it runs what they order, or says why it cannot
   * (Applied is anything but NotHeardRunning).
   */
  arrived: boolean;
}

export interface Sent {
  vmiUid: string;
  text: string;
  sentAtMs: number;
  checkedAtMs: number;
  failedAtMs: number;
  lastError: string;
}

/** Whether to read the plane's VMI now (pure): not while a failure is waited out or soon after a look. */
export function timeToLook(last: Sent | undefined, text: string, nowMs: number): boolean {
  if (last?.failedAtMs && nowMs - last.failedAtMs < PLANE_CONSOLE_LIMITS.retryMs) return false;
  return !(last?.text === text && nowMs - last.checkedAtMs < PLANE_CONSOLE_LIMITS.recheckMs);
}

/**
 * What to send the plane's running VMI (pure): `send` when this VMI has not had these lines from
 * us, `resend` when the air says they did not arrive, else `none`.
 */
export function sendStep(
  last: Sent | undefined,
  text: string,
  nowMs: number,
  vmiUid: string,
  plane: PlaneHeard | undefined,
): 'send' | 'resend' | 'none' {
  if (last?.vmiUid !== vmiUid || last.text !== text) return 'send';
  if (plane?.heard && !plane.arrived && nowMs - last.sentAtMs >= PLANE_CONSOLE_LIMITS.resendMs)
    return 'resend';
  return 'none';
}

export const VMI: ResourceType = {
  group: 'kubevirt.io',
  version: 'v1',
  plural: 'virtualmachineinstances',
  kind: 'VirtualMachineInstance',
  namespaced: true,
};

const log = logger('plane-console');

export class PlaneConsole {
  private readonly sent = new Map<string, Sent>();

  forget(id: string): void {
    this.sent.delete(id);
  }

  /**
   * Sends the plane its deployment lines when its running VMI does not have them from us yet, or
   * again when `plane` (the air) says they have not arrived.
   */
  async sync(
    ctx: ReconcileContext,
    k: OberonKube,
    s: KubeSettings,
    id: string,
    plane: PlaneHeard | undefined,
    nowMs = Date.now(),
  ): Promise<void> {
    const text = liveApplyLines(s.deployments);
    const last = this.sent.get(id);
    if (!timeToLook(last, text, nowMs)) return;
    const vmiName = machineChild(`${s.name}-plane`);
    const entry: Sent = last ?? {
      vmiUid: '',
      text: '',
      sentAtMs: 0,
      checkedAtMs: 0,
      failedAtMs: 0,
      lastError: '',
    };
    try {
      const vmi = await ctx.client.getOrUndefined<KubeObject & { status?: { phase?: string } }>(
        VMI,
        s.namespace,
        vmiName,
      );
      const uid = vmi?.metadata.uid as string | undefined;
      if (!uid || vmi?.status?.phase !== 'Running') return; // not running yet: looked at again next pass
      const step = sendStep(last, text, nowMs, uid, plane);
      if (step === 'none') {
        this.sent.set(id, { ...entry, checkedAtMs: nowMs });
        return;
      }
      await sendToSerialConsole(ctx.client, s.namespace, vmiName, text);
      this.sent.set(id, {
        vmiUid: uid,
        text,
        sentAtMs: nowMs,
        checkedAtMs: nowMs,
        failedAtMs: 0,
        lastError: '',
      });
      const lines = text.split('\n').filter(Boolean).length;
      const again = step === 'resend';
      log.info(
        { kube: id, vmi: vmiName, vmiUid: uid, lines, again },
        again
          ? 'Sent the deployments to the plane again: heard on the air, it does not run them'
          : 'Sent the deployments to the plane through its serial console',
      );
      void ctx.recorder.record(
        k,
        'Normal',
        'DeploymentsSent',
        again
          ? `Sent ${lines} deployment line(s) to the plane VM ${vmiName} again: ${PLANE_CONSOLE_LIMITS.resendMs / 1000} s after the last time, the air does not hear them running`
          : `Sent ${lines} deployment line(s) to the plane VM ${vmiName} through its serial console`,
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
