// OberonKube's boot commands: pure, shared by the controllers and `retrokube up`. Apart from the
// TypeBox schema in oberonkube.ts (which re-exports them) so that a reconcile does not load the
// schema's library (#32).
import { DEPLOYMENT_ITEM, DEPLOYMENT_WORDS } from './oberonkube-limits.ts';
import { MACHINE_LIMITS } from './oberonmachine-limits.ts';

export interface DeploymentItem {
  name: string;
  replicas: number;
  module: string;
}

/** "web 4 Ticker; api 2 Ticker2" → items (the CRD pattern has already checked the grammar). */
export function parseDeploymentList(text: string | undefined): DeploymentItem[] {
  const re = new RegExp(`^${DEPLOYMENT_ITEM}$`);
  return (text ?? '')
    .split(';')
    .map((s) => s.trim().replace(/\s+/g, ' '))
    .filter((s) => s !== '')
    .map((s) => {
      if (!re.test(s)) throw new Error(`deployment "${s}" is refused: ${DEPLOYMENT_WORDS}`);
      const [name, replicas, module] = s.split(' ');
      return { name, replicas: Number(replicas), module };
    });
}

/** Node names in join order: node-a, node-b, ... (6 characters at most). */
export function kubeNodeName(i: number): string {
  if (i < 0 || i >= 26) throw new Error(`node index ${i} is outside a..z`);
  return `node-${String.fromCharCode(97 + i)}`;
}

/** `Kube.Start;KubeNet.Serve <cluster> <key>` (the trailing space goes when there is no key). */
export function planeRoleCommands(cluster: string, key: string): string {
  return `Kube.Start;KubeNet.Serve ${cluster} ${key}`.trimEnd();
}

/** `KubeNet.Join <node> <cluster> <key>`. */
export function nodeRoleCommands(node: string, cluster: string, key: string): string {
  return `KubeNet.Join ${node} ${cluster} ${key}`.trimEnd();
}

/**
 * `Kube.Hold N`: a plane with a fresh store binds no pod until N nodes are heard (at most 30 s), so
 * the first pods spread over all nodes instead of landing on the node it hears first. A plane whose
 * store already has bound pods (a restart, a scale) ignores it.
 */
export function holdCommand(nodes: number): string {
  return `Kube.Hold ${nodes}`;
}

/**
 * The plane's live deployments: one `Kube.Apply name N Module` line each. Apply is right here,
 * unlike in boot commands, because the lines are always the current desired state, not a text
 * fixed at the plane's creation that would undo later rollouts.
 */
export function liveApplyLines(items: readonly DeploymentItem[]): string {
  return items.map((d) => `Kube.Apply ${d.name} ${d.replicas} ${d.module}\n`).join('');
}

/** One `Kube.Ensure` per deployment — never `Apply`, which would undo rollouts at every plane boot. */
export function ensureCommands(items: readonly DeploymentItem[]): string {
  return items.map((d) => `Kube.Ensure ${d.name} ${d.replicas} ${d.module}`).join(';');
}

/** Joins command groups with `;` and checks Boot's limits (printable ASCII, ≤ 240 in all). */
export function joinCommands(parts: readonly (string | undefined)[]): string {
  const text = parts.filter((p): p is string => !!p && p.trim() !== '').join(';');
  if (!/^[ -~]*$/.test(text)) throw new Error('boot commands must be printable ASCII');
  if (text.length > MACHINE_LIMITS.bootChars)
    throw new Error(
      `boot commands are ${text.length} characters; Boot takes at most ${MACHINE_LIMITS.bootChars}`,
    );
  return text;
}

/** The plane's and the nodes' full boot commands for a cluster (key as hex, '' = zero key). */
export function kubeBootCommands(o: {
  cluster: string;
  key: string;
  nodes: number;
  deployments: readonly DeploymentItem[];
}): { plane: string; nodes: Array<{ name: string; commands: string }> } {
  return {
    plane: joinCommands([planeRoleCommands(o.cluster, o.key), ensureCommands(o.deployments)]),
    nodes: Array.from({ length: o.nodes }, (_, i) => {
      const name = kubeNodeName(i);
      return { name, commands: joinCommands([nodeRoleCommands(name, o.cluster, o.key)]) };
    }),
  };
}
