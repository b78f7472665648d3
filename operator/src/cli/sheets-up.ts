// `retrokube sheets up`: a local Sheeternetes cluster with its web console. It lives with the CLI,
// not in sheets/, because it composes sheets/ with console/ (local/sheets-up.ts), two folders of
// one layer that must not import each other.
import { type Command, Option } from 'commander';
import { positiveInt, sheetsGroup } from '../sheets/ctl/verbs.ts';
import { DEFAULT_TOKEN } from '../sheets/default-token.ts';
import { tokenAndKey } from '../sheets/secret-flags.ts';

export function registerSheetsUpVerb(program: Command): void {
  sheetsGroup(program)
    .command('up')
    .description('a local cluster: apiserver + node agents + sample deployments, then the pods table')
    .option('--nodes <n>', 'node agents to start', positiveInt('--nodes', 0, 50), 3)
    .option('--workbook <file>', 'the cluster store', 'cluster.xlsx')
    .option('--port <n>', 'apiserver port (0 = any free port)', positiveInt('--port'), 8787)
    .addOption(
      new Option('--token <t>', 'shared token').default(
        process.env.TOKEN ?? DEFAULT_TOKEN,
        'CHANGE_ME_super_secret',
      ),
    )
    .option(
      '--wait <s>',
      'seconds to wait for pods to run before printing',
      positiveInt('--wait', 0, 600),
      30,
    )
    .option('--detach', 'print the table and exit (stops the cluster) instead of running until Ctrl-C')
    .option(
      '--allow-process',
      'node agents offer the process runtime: commands of "process" deployments run on this host (the web sample needs it)',
    )
    .option(
      '--console-port <n>',
      'port of the web console on 127.0.0.1 (default: any free port)',
      positiveInt('--console-port'),
    )
    .option('--no-console', 'serve no web console')
    .option(
      '--key-file <file>',
      'HMAC signing key (first line of FILE, or env SIGNING_KEY): every POST must be signed; the agents and the console sign theirs',
    )
    .addHelpText(
      'after',
      '\nExample:\n  retrokube sheets up --nodes 3 --workbook cluster.xlsx --allow-process\n  retrokube skctl --server http://127.0.0.1:8787 get pods\n\nThe web console (its URL is printed; loopback only) shows the tabs live, the events, a plot of\nthe Metrics tab, and steers the cluster: scale, cordon, drain, stop and start node agents, skctl verbs.\n',
    )
    .action(async (o) => {
      // The key only: this verb's token is --token (TOKEN, or the well-known default on loopback).
      const signingKey = tokenAndKey({ keyFile: o.keyFile }, (l: string) => process.stderr.write(l)).key;
      const { runUp } = await import('../local/sheets-up.ts');
      await runUp({
        nodes: o.nodes,
        workbook: o.workbook,
        port: o.port,
        token: o.token,
        waitSec: o.wait,
        detach: Boolean(o.detach),
        allowProcess: Boolean(o.allowProcess),
        signingKey,
        consolePort: o.console ? (o.consolePort ?? 0) : null,
      });
    });
}
