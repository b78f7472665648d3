// `retrokube operator` runs the controllers against the current kubeconfig;
// `retrokube crds` prints the CustomResourceDefinitions.
import type { Command } from 'commander';
import { LEVELS, type OperatorVerbOptions } from './operator-options.ts';

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
    .option(
      '--air-image <image>',
      "image of the air relays when an OberonAir names none (default: $RETROKUBE_IMAGE or this version's image)",
    )
    .option('--kubevirt', 'also run OberonMachines of runtime kubevirt (needs the VirtualMachine CRD)', false)
    .option(
      '--member-hosts <hosts>',
      'hosts (names or IPs, comma-separated) a SheetFederation/SheetMigration member url may name besides Services of its namespace (env RETROKUBE_MEMBER_HOSTS)',
    )
    .option(
      '--docker-sockets <paths>',
      'host paths (comma-separated) a SheetCluster dockerSocket may name; default only /var/run/docker.sock and /run/docker.sock. Each is mounted into agent pods: allow only sockets you would hand to every tenant',
    )
    .option('--log-level <level>', `log level (${LEVELS.join(', ')})`)
    .addHelpText(
      'after',
      `
Examples:
  retrokube operator                                  # all namespaces, metrics :8080, probes :8081
  retrokube operator --namespace lab --metrics-port 0 # one namespace, no metrics listener
  retrokube operator --leader-elect --lease-namespace retrokube-system`,
    )
    .action(async (o: OperatorVerbOptions) => {
      const { runOperator } = await import('./operator-run.ts');
      await runOperator(o);
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
    .action(async (o) => {
      const { crdStream } = await import('../api/generate.ts');
      if (o.output === 'yaml') {
        process.stdout.write(crdStream());
      } else if (o.output === 'json') {
        // The YAML parser loads here, not with the verbs: the operator reads no YAML in a pod (#32).
        const { parseAllDocuments } = await import('yaml');
        const docs = parseAllDocuments(crdStream()).map((d) => d.toJSON());
        process.stdout.write(`${JSON.stringify(docs, null, 2)}\n`);
      } else {
        throw new Error(`--output "${o.output}" is not yaml or json`);
      }
    });
}
