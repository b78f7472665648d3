// The options of `retrokube operator`, shared by the verb (operator.ts) and its heavy half
// (operator-run.ts, loaded only when the verb runs) so that neither imports the other back.

/** What commander hands the `operator` action. */
export interface OperatorVerbOptions {
  kubeconfig?: string;
  namespace?: string;
  leaderElect?: boolean;
  leaseNamespace?: string;
  leaderElectionNamespace?: string;
  leaderElectionId: string;
  metricsPort: string;
  metricsBindAddress?: string;
  healthPort: string;
  healthProbeBindAddress?: string;
  airImage?: string;
  kubevirt?: boolean;
  /** Hosts a federation/migration member `url` may name besides its namespace's Services (#28.7). */
  memberHosts?: string;
  /** Host paths a SheetCluster's dockerSocket may name besides Docker's own (#28.10). */
  dockerSockets?: string;
  logLevel?: string;
}

/** The member hosts allow-list: the flag, else RETROKUBE_MEMBER_HOSTS; comma-separated. */
export const memberHostList = (v: string | undefined): string[] =>
  (v ?? process.env.RETROKUBE_MEMBER_HOSTS ?? '')
    .split(',')
    .map((h) => h.trim())
    .filter(Boolean);

export const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'];

/** ':8080', '127.0.0.1:8080', '8080' → { host, port }; '0' disables the listener (controller-runtime style). */
export function parseBindAddress(v: string, flag: string): { host: string; port: number } | undefined {
  if (v === '0') return undefined;
  const m = /^(?:(.*):)?(\d{1,5})$/.exec(v);
  const port = m ? Number(m[2]) : Number.NaN;
  if (!m || port > 65535)
    throw new Error(`${flag} "${v}" is not [host]:port or a port number (0 disables it)`);
  return { host: m[1] || '0.0.0.0', port };
}
