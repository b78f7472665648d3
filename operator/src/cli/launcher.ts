// `retrokube launcher`: the RISC5 launcher component's loop (launcher-component.ts), run by the
// chart's launcher Deployment (launcher.enabled) in the KubeVirt namespace.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { LAUNCHER_LOOP_LIMITS } from '../controllers/launcher-plan.ts';
import { logger } from '../util/log.ts';

export function registerLauncherVerbs(program: Command): void {
  program
    .command('launcher')
    .description(
      "keep the KubeVirt CR's RISC5 launcher patch in line with a table of launcher images, and report it (the chart's launcher component)",
    )
    .requiredOption('--table <file>', 'lines "<KubeVirt version> <launcher image>" (# comments)')
    .option('--namespace <ns>', 'the KubeVirt namespace', 'kubevirt')
    .option('--kubeconfig <path>', 'kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)')
    .option(
      '--interval <seconds>',
      'seconds between two passes',
      String(LAUNCHER_LOOP_LIMITS.intervalMs / 1000),
    )
    .option(
      '--allow-workload-update',
      'switch even when KubeVirt would live-migrate or evict every VM (workloadUpdateMethods)',
      false,
    )
    .option('--once', 'one pass, then exit', false)
    .action(
      async (o: {
        table: string;
        namespace: string;
        kubeconfig?: string;
        interval: string;
        allowWorkloadUpdate: boolean;
        once: boolean;
      }) => {
        const interval = Number(o.interval);
        if (!Number.isFinite(interval) || interval < 1)
          throw new Error('--interval must be a number of seconds ≥ 1');
        // Loaded on use: the Kubernetes client would otherwise load with every verb (the air relay
        // runs in a 64Mi pod).
        const { launcherPass, parseLauncherTable } = await import('../controllers/launcher-component.ts');
        const { KubeClient } = await import('../runtime/client.ts');
        const table = parseLauncherTable(readFileSync(o.table, 'utf8'));
        const client = KubeClient.fromDefault(o.kubeconfig);
        const log = logger('launcher', { namespace: o.namespace });
        let last = '';
        for (;;) {
          try {
            const pass = await launcherPass(client, {
              namespace: o.namespace,
              table,
              allowWorkloadUpdate: o.allowWorkloadUpdate,
            });
            const now = `${pass.state} ${pass.reason}`;
            if (now !== last || pass.wrote) log.info({ state: pass.state, wrote: pass.wrote }, pass.reason);
            last = now;
          } catch (err) {
            log.error({ err }, 'launcher pass failed; next pass retries');
          }
          if (o.once) return;
          await new Promise((r) => setTimeout(r, interval * 1000));
        }
      },
    );
}
