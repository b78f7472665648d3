// The heavy half of `retrokube operator`: loaded only when the verb runs, so every other verb of
// the CLI starts without @kubernetes/client-node and the controllers.
import { randomBytes } from 'node:crypto';
import { flushCompileCache } from 'node:module';
import { AirEars } from '../controllers/air-ears.ts';
import { oberonAirController } from '../controllers/oberonair.ts';
import { type KubeControllerOptions, oberonKubeController } from '../controllers/oberonkube.ts';
import { oberonMachineController } from '../controllers/oberonmachine.ts';
import { rolloutController } from '../controllers/rollout.ts';
import { type SheetControllerOptions, sheetClusterController } from '../controllers/sheetcluster.ts';
import { sheetFederationController } from '../controllers/sheetfederation.ts';
import { type MigrationControllerOptions, sheetMigrationController } from '../controllers/sheetmigration.ts';
import { KubeClient } from '../runtime/client.ts';
import { defaultIdentity } from '../runtime/leader.ts';
import { Manager } from '../runtime/manager.ts';
import { portOf } from '../runtime/server.ts';
import { logger, rootLogger } from '../util/log.ts';
import { keepYoungHeapSmall } from '../util/young-heap.ts';
import { LEVELS, memberHostList, type OperatorVerbOptions, parseBindAddress } from './operator-options.ts';

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
  /** Where the operator reaches a SheetCluster's apiserver (tests: a local process); default its Service. */
  sheetsAddress?: SheetControllerOptions['sheetsAddress'];
  sheetTiming?: SheetControllerOptions['timing'];
  /** Hosts a member `url` may name besides its namespace's Services (sheet-members.ts memberUrlProblem). */
  memberHosts?: string[];
  /** Host paths a SheetCluster dockerSocket may name (default DOCKER_SOCKETS). */
  dockerSockets?: readonly string[];
  /** SheetMigration hooks (tests stop the operator between a step's writes and its status). */
  migration?: MigrationControllerOptions;
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
  // One passive station per air, shared: the air's census and every cluster view on it.
  const ears = new AirEars({ address: opts.airAddress });
  mgr.add(oberonAirController({ image: opts.image, ears }));
  mgr.add(oberonMachineController({ image: opts.image, kubevirt: opts.kubevirt }));
  // One seed for every controller that derives keys: the Rollout controller reaches a SheetCluster
  // with the token and signing key the SheetCluster controller generated from it.
  const keySeed = opts.keySeed || process.env.RETROKUBE_KEY_SEED || randomBytes(32).toString('hex');
  mgr.add(oberonKubeController({ ears, keySeed }));
  mgr.add(
    sheetClusterController({
      image: opts.image,
      keySeed,
      sheetsAddress: opts.sheetsAddress,
      dockerSockets: opts.dockerSockets,
      timing: opts.sheetTiming,
    }),
  );
  const memberHosts = opts.memberHosts ?? [];
  mgr.add(sheetFederationController({ sheetsAddress: opts.sheetsAddress, keySeed, memberHosts }));
  mgr.add(
    sheetMigrationController({ sheetsAddress: opts.sheetsAddress, keySeed, memberHosts, ...opts.migration }),
  );
  mgr.add(rolloutController({ keySeed, sheetsAddress: opts.sheetsAddress }));
  // The air stations live as long as the manager.
  const stop = mgr.stop.bind(mgr);
  mgr.stop = async () => {
    await stop();
    await ears.closeAll();
  };
  return mgr;
}

/** Runs the operator until SIGTERM or SIGINT (the body of `retrokube operator`). */
export async function runOperator(o: OperatorVerbOptions): Promise<void> {
  keepYoungHeapSmall(); // before the caches fill: ~100 MiB less RSS at 1,000 OberonKubes (young-heap.ts)
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
    leaseNamespace: o.leaseNamespace ?? o.leaderElectionNamespace ?? process.env.POD_NAMESPACE ?? 'default',
    leaseName: o.leaderElectionId,
    identity: process.env.POD_NAME
      ? `${process.env.POD_NAME}_${defaultIdentity().split('_').pop()}`
      : undefined,
    metrics,
    health,
    image: o.airImage,
    kubevirt: o.kubevirt,
    memberHosts: memberHostList(o.memberHosts),
    dockerSockets: o.dockerSockets
      ? o.dockerSockets
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean)
      : undefined,
    onLostLeadership: () => {
      exitCode = 1;
      process.kill(process.pid, 'SIGTERM');
    },
  });
  await mgr.start();
  // Node writes its compile cache (on when started through bin/retrokube.js) at exit, and an
  // operator often ends killed: written now, the next start finds its modules stripped and compiled
  // (~25 MiB less RSS at start than stripping them again, #32). Without a cache this does nothing;
  // in the image the cache is baked at build and read-only in the pod: every module of the start
  // was found there, and Node ignores a write it cannot make (test/unit/image-compile-cache.test.ts).
  flushCompileCache();
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
}
