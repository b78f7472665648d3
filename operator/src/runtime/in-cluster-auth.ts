// The pod's own service account as a KubeAuth (client.ts), without @kubernetes/client-node: a
// machine pod that reads one ConfigMap must stay within its 128Mi, and that library alone adds
// about 85 MB. Same sources as every in-cluster client: the API Service's address in the
// environment, the projected token and the cluster's CA in the service account folder.
import { readFileSync } from 'node:fs';
import type https from 'node:https';
import net from 'node:net';
import { join } from 'node:path';
import type { KubeAuth } from './kube-auth.ts';

export const IN_CLUSTER_LIMITS = {
  // The kubelet rotates a projected token well before it expires (at 80 % of its hour); reading
  // it again once a minute follows that, as client-go does.
  tokenRereadMs: 60_000,
} as const;

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The pod's service account, or undefined outside a pod (no API Service in the environment, no token). */
export function inClusterAuth(
  env: NodeJS.ProcessEnv = process.env,
  dir: string = SERVICE_ACCOUNT_DIR,
): KubeAuth | undefined {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) return undefined;
  let ca: Buffer;
  try {
    ca = readFileSync(join(dir, 'ca.crt'));
    readFileSync(join(dir, 'token'));
  } catch {
    return undefined;
  }
  const server = `https://${net.isIPv6(host) ? `[${host}]` : host}:${port}`;
  let token = '';
  let readAt = -Infinity;
  return {
    getCurrentCluster: () => ({ server }),
    async applyToHTTPSOptions(opts: https.RequestOptions): Promise<void> {
      if (Date.now() - readAt >= IN_CLUSTER_LIMITS.tokenRereadMs) {
        token = readFileSync(join(dir, 'token'), 'utf8').trim();
        readAt = Date.now();
      }
      opts.ca = ca;
      opts.headers = { ...(opts.headers ?? {}), Authorization: `Bearer ${token}` };
    },
  };
}
