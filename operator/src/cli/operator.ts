// `retrokube operator` runs the controllers against the current kubeconfig;
// `retrokube crds` prints the CustomResourceDefinitions.
import type { Command } from 'commander';
import { parseAllDocuments } from 'yaml';
import { crdStream } from '../api/generate.ts';
import { defaultImage, oberonAirController } from '../controllers/oberonair.ts';
import { type KubeControllerOptions, oberonKubeController } from '../controllers/oberonkube.ts';
import { oberonMachineController } from '../controllers/oberonmachine.ts';
import { KubeClient } from '../runtime/client.ts';
import { defaultIdentity } from '../runtime/leader.ts';
import { Manager } from '../runtime/manager.ts';
import { portOf } from '../runtime/server.ts';
import { logger, rootLogger } from '../util/log.ts';

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'];

/** ':8080', '127.0.0.1:8080', '8080' → { host, port }; '0' disables the listener (controller-runtime style). */
export function parseBindAddress(v: string, flag: string): { host: string; port: number } | undefined {
  if (v === '0') return undefined;
  const m = /^(?:(.*):)?(\d{1,5})$/.exec(v);
  const port = m ? Number(m[2]) : Number.NaN;
  if (!m || port > 65535)
    throw new Error(`${flag} "${v}" is not [host]:port or a port number (0 disables it)`);
  return { host: m[1] || '0.0.0.0', port };
}

export function createOperatorManager(opts: {
  client: KubeClient;
  namespace?: string;
  leaderElect?: boolean;
  leaseNamespace?: string;
  leaseName?: string;
  identity?: string;
  metrics?: { host: string; port: number };
  health?: { host: string; port: number };
  image?: string;
  /** Also run machines as KubeVirt VirtualMachines (the VirtualMachine CRD must exist). */
  kubevirt?: boolean;
  /** Where the operator hears an air (tests point it at a local relay); default its Service. */
  airAddress?: KubeControllerOptions['airAddress'];
  /** Seed of generated cluster keys (default $RETROKUBE_KEY_SEED, else random per process). */
  keySeed?: string;
  resyncMs?: number;
  onLostLeadership?: () => void;
}): Manager {
  const mgr = new Manager({
    client: opts.client,
    namespace: opts.namespace,
    metricsPort: opts.metrics?.port,
    healthPort: opts.health?.port,
    bindAddress: opts.metrics?.host ?? opts.health?.host,
    resyncMs: opts.resyncMs,
    onLostLeadership: opts.onLostLeadership,
    leaderElection: opts.leaderElect
      ? {
          namespace: opts.leaseNamespace ?? 'default',
          name: opts.leaseName ?? 'retrokube-operator',
          identity: opts.identity ?? defaultIdentity(),
        }
      : undefined,
  });
  mgr.add(oberonAirController({ image: opts.image }));
  mgr.add(oberonMachineController({ image: opts.image, kubevirt: opts.kubevirt }));
  const kube = oberonKubeController({
    airAddress: opts.airAddress,
    keySeed: opts.keySeed ?? process.env.RETROKUBE_KEY_SEED,
  });
  mgr.add(kube);
  // The air stations live as long as the manager.
  const stop = mgr.stop.bind(mgr);
  mgr.stop = async () => {
    await stop();
    await kube.ears.closeAll();
  };
  return mgr;
}

export function registerOperatorVerbs(program: Command): void {
  program
    .command('operator')
    .description(
      'run the retrokube controllers against the current kubeconfig (in-cluster: its ServiceAccount)',
    )
    .option('--kubeconfig <path>', 'kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)')
    .option('--namespace <ns>', 'watch and reconcile only this namespace (default: all namespaces)')
    .option(
      '--leader-elect',
      'elect one active instance through a Lease (run two replicas for fast fail-over)',
      false,
    )
    .option('--lease-namespace <ns>', 'namespace of the Lease (default: $POD_NAMESPACE or default)')
    .option('--leader-election-namespace <ns>', 'alias of --lease-namespace')
    .option('--leader-election-id <name>', 'name of the Lease', 'retrokube-operator')
    .option('--metrics-port <port>', 'port of /metrics (0 disables it)', '8080')
    .option('--metrics-bind-address <addr>', '[host]:port of /metrics, overrides --metrics-port')
    .option('--health-port <port>', 'port of /healthz and /readyz (0 disables it)', '8081')
    .option('--health-probe-bind-address <addr>', '[host]:port of the probes, overrides --health-port')
    .option('--air-image <image>', 'image of the air relays when an OberonAir names none', defaultImage())
    .option('--kubevirt', 'also run OberonMachines of runtime kubevirt (needs the VirtualMachine CRD)', false)
    .option('--log-level <level>', `log level (${LEVELS.join(', ')})`)
    .addHelpText(
      'after',
      `
Examples:
  retrokube operator                                  # all namespaces, metrics :8080, probes :8081
  retrokube operator --namespace lab --metrics-port 0 # one namespace, no metrics listener
  retrokube operator --leader-elect --lease-namespace retrokube-system`,
    )
    .action(async (o) => {
      if (o.logLevel) {
        if (!LEVELS.includes(o.logLevel))
          throw new Error(`--log-level "${o.logLevel}" is not one of ${LEVELS.join(', ')}`);
        rootLogger.level = o.logLevel;
      }
      const metrics = parseBindAddress(o.metricsBindAddress ?? String(o.metricsPort), '--metrics-port');
      const health = parseBindAddress(o.healthProbeBindAddress ?? String(o.healthPort), '--health-port');
      const log = logger('operator');
      const client = KubeClient.fromDefault(o.kubeconfig);
      // A stray rejection somewhere is logged, never fatal: the manager keeps reconciling.
      process.on('unhandledRejection', (err) => log.error({ err }, 'Unhandled rejection (ignored)'));
      let exitCode = 0;
      const mgr = createOperatorManager({
        client,
        namespace: o.namespace,
        leaderElect: o.leaderElect,
        leaseNamespace:
          o.leaseNamespace ?? o.leaderElectionNamespace ?? process.env.POD_NAMESPACE ?? 'default',
        leaseName: o.leaderElectionId,
        identity: process.env.POD_NAME
          ? `${process.env.POD_NAME}_${defaultIdentity().split('_').pop()}`
          : undefined,
        metrics,
        health,
        image: o.airImage,
        kubevirt: o.kubevirt,
        onLostLeadership: () => {
          exitCode = 1;
          process.kill(process.pid, 'SIGTERM');
        },
      });
      await mgr.start();
      const ports = mgr.httpServers.map(portOf);
      log.info(
        { server: client.server.origin, namespace: o.namespace ?? '*', ports, leaderElect: !!o.leaderElect },
        'Operator started',
      );
      await new Promise<void>((resolve) => {
        const bye = (signal: string) => {
          log.info({ signal }, 'Stopping');
          resolve();
        };
        process.once('SIGTERM', () => bye('SIGTERM'));
        process.once('SIGINT', () => bye('SIGINT'));
      });
      await mgr.stop();
      process.exitCode = exitCode;
    });

  program
    .command('crds')
    .description('print the CustomResourceDefinitions of retrokube.io (apply them with kubectl)')
    .option('-o, --output <format>', 'yaml or json', 'yaml')
    .addHelpText(
      'after',
      `
Examples:
  retrokube crds | kubectl apply --server-side -f -
  retrokube crds -o json | jq '.[].metadata.name'`,
    )
    .action((o) => {
      if (o.output === 'yaml') {
        process.stdout.write(crdStream());
      } else if (o.output === 'json') {
        const docs = parseAllDocuments(crdStream()).map((d) => d.toJSON());
        process.stdout.write(`${JSON.stringify(docs, null, 2)}\n`);
      } else {
        throw new Error(`--output "${o.output}" is not yaml or json`);
      }
    });
}
