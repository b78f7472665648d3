// The planner's eyes and hands on a local Oberon cluster, as pure functions: what the cluster's air
// view says about one deployment (the same judgement the Rollout controller makes from an
// OberonKube's status: the plane heard, every node Ready, running = desired pods, enough pods heard
// running the new image), and the live-commands text that tells the running plane its deployments.
import type { ClusterView } from '../air/view.ts';
import type { Observation, Version } from '../rollout/plan.ts';
import type { Deployment } from './spec.ts';

/** What the air says about `deployment` on a cluster whose plane was told `desired`. Pure. */
export function observeLocalKube(
  view: ClusterView | null,
  desired: readonly Deployment[],
  nodeNames: readonly string[],
  deployment: string,
  minRunning: number,
): Observation {
  const item = desired.find((d) => d.name === deployment);
  if (!item) return { converged: false, healthy: false };
  const current: Version = { image: item.module, replicas: item.replicas };
  if (!view) return { current, converged: false, healthy: false, problem: 'not listening to its air yet' };
  if (!view.plane.heard)
    return { current, converged: false, healthy: false, problem: 'the plane is not heard on the air' };
  const ready = view.nodes.filter((n) => n.ready && nodeNames.includes(n.name));
  const imageOf = new Map(view.pods.map((p) => [p.id, p.image]));
  // Pods running the new image, heard from Ready nodes (a pod still starting elsewhere does not count).
  const heard = ready.flatMap((n) => n.running).filter((id) => imageOf.get(id) === item.module).length;
  const desiredPods = desired.reduce((s, d) => s + d.replicas, 0);
  const converged =
    view.converged &&
    view.running === desiredPods &&
    ready.length === nodeNames.length &&
    heard >= item.replicas;
  return { current, converged, healthy: view.running >= minRunning };
}

/** The deployments with one of them set to `version` (the others as they were). Pure. */
export function withLocalVersion(
  desired: readonly Deployment[],
  deployment: string,
  version: Version,
): Deployment[] {
  if (!desired.some((d) => d.name === deployment))
    throw new Error(`deployment ${deployment} does not exist on this cluster`);
  return desired.map((d) =>
    d.name === deployment
      ? { name: d.name, replicas: version.replicas ?? d.replicas, module: version.image ?? d.module }
      : { ...d },
  );
}

/** The live-commands file's text: the full desired state, one `Kube.Apply` line per deployment. */
export function liveCommandsText(desired: readonly Deployment[]): string {
  return desired.map((d) => `Kube.Apply ${d.name} ${d.replicas} ${d.module}\n`).join('');
}

/**
 * The desired deployments after a restart of `up`: the FILE's, each replaced by the live file's
 * line of the same name (what a rollout last told the plane, which the plane's store keeps too).
 */
export function desiredAfterRestart(
  fromFile: readonly Deployment[],
  liveLines: readonly string[],
): Deployment[] {
  const live = new Map<string, Deployment>();
  for (const l of liveLines) {
    if (!l.startsWith('Kube.Apply ')) continue; // Kube.Hold is not a deployment
    const [, name, replicas, module] = l.split(' ');
    live.set(name, { name, replicas: Number(replicas), module });
  }
  return fromFile.map((d) => ({ ...(live.get(d.name) ?? d) }));
}
