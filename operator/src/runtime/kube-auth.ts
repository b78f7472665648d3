// What a KubeClient (client.ts) needs of a configuration, in a module of its own so that the
// readers of one (kubeconfig.ts, in-cluster-auth.ts) and the client do not import each other.
import type https from 'node:https';

/** The server, and auth + TLS for each request. client-node's KubeConfig has both. */
export interface KubeAuth {
  getCurrentCluster(): { server: string; caData?: string; caFile?: string } | null;
  /** Sets headers (a token, read again each time: tokens rotate) and TLS material on the options. */
  applyToHTTPSOptions(opts: https.RequestOptions): Promise<void>;
}
