// What names a plane's live-commands ConfigMap, apart from the watch itself (live-configmap.ts):
// the CLI checks --live-configmap and the renderer names the entry without loading the
// Kubernetes client.

/** The ConfigMap entry that holds the lines. */
export const LIVE_CONFIGMAP_KEY = 'deployments';

/** Parses `namespace/name` as --live-configmap takes it. */
export function parseConfigMapRef(text: string): { namespace: string; name: string } {
  const m = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-.a-z0-9]*[a-z0-9])?)$/.exec(text);
  if (!m?.[1] || !m[3])
    throw new Error(
      `--live-configmap "${text}" is not NAMESPACE/NAME (for example lab/rk-kube-lab-deployments)`,
    );
  return { namespace: m[1], name: m[3] };
}
