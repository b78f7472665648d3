// CLI verbs of the Sheeternetes control plane: `retrokube sheets serve|ctl|up`, and `retrokube skctl`
// (the same as `sheets ctl`, named after the reference tool).
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { readSecretFile } from '../../util/secret-option.ts';
import { tokenAndKey } from '../secret-flags.ts';
import { resolveConfig, SheetsClient } from './client.ts';
import { KIND_ALIASES, renderTable } from './table.ts';

/** The `sheets` group, shared with the node and image verbs: found if it exists, else created. */
export function sheetsGroup(program: Command): Command {
  return (
    program.commands.find((c) => c.name() === 'sheets') ??
    program
      .command('sheets')
      .description('Sheeternetes: a container orchestrator whose control plane is a spreadsheet')
  );
}

export function positiveInt(flag: string, min = 0, max = 65535) {
  return (v: string): number => {
    if (!/^\d+$/.test(v)) throw new Error(`${flag} "${v}" must be a whole number`);
    const n = Number(v);
    if (n < min || n > max) throw new Error(`${flag} ${n} must be between ${min} and ${max}`);
    return n;
  };
}

/**
 * `upServer` finds the apiserver of a running `retrokube up` (the cli layer reads its state
 * folder), so `skctl get pods` works beside `up` as `air listen` and `screen` do.
 */
export function registerSheetsControlPlaneVerbs(
  program: Command,
  upServer: () => string | undefined = () => undefined,
): void {
  const sheets = sheetsGroup(program);
  registerServe(sheets);
  addCtlVerbs(
    sheets.command('ctl').description('talk to a Sheeternetes apiserver (the reference skctl, plus -o json)'),
    upServer,
  );
  addCtlVerbs(program.command('skctl').description('alias of `retrokube sheets ctl`'), upServer);
}

function registerServe(sheets: Command): void {
  sheets
    .command('serve')
    .description('run the apiserver over a workbook (xlsx file, memory:, or google:<spreadsheetId>)')
    .option('--workbook <file>', 'the cluster store', process.env.WORKBOOK ?? 'cluster.xlsx')
    .option(
      '--port <n>',
      'listen port (0 = any free port)',
      positiveInt('--port'),
      Number(process.env.PORT ?? 8787),
    )
    .option(
      '--host <addr>',
      'listen address; anything but loopback needs your own token and a signing key',
      '127.0.0.1',
    )
    .option('--token <t>', 'shared token; prefer env TOKEN or --token-file (argv shows in ps)')
    .option('--token-file <file>', 'read the shared token from the first line of FILE')
    .option('--key <k>', 'HMAC signing key, every POST must be signed; prefer env SIGNING_KEY or --key-file')
    .option('--key-file <file>', 'read the HMAC signing key from the first line of FILE')
    .option(
      '--node-ttl <s>',
      'seconds before a silent node is NotReady',
      positiveInt('--node-ttl', 1, 86400),
      Number(process.env.NODE_TTL ?? 30),
    )
    .option(
      '--sign-ttl <s>',
      'largest allowed signature clock skew in seconds',
      positiveInt('--sign-ttl', 1, 86400),
      Number(process.env.SIGN_TTL ?? 300),
    )
    .option(
      '--nodeport-range <lo-hi>',
      'host ports for auto-assigned pod ports',
      process.env.NODEPORT_RANGE ?? '30000-32767',
    )
    .option(
      '--metrics-interval <s>',
      'seconds between Metrics-tab samples',
      positiveInt('--metrics-interval', 1, 86400),
      15,
    )
    .option(
      '--metrics-retention <s>',
      'seconds of samples kept in the Metrics tab',
      positiveInt('--metrics-retention', 1, 31 * 86400),
      3600,
    )
    .option('--no-samples', 'do not write the sample deployments into a new workbook')
    .option('--google-credentials <file>', 'credentials JSON for a google: workbook')
    .option('--google-root-url <url>', 'Sheets API root URL (an emulator)')
    .addHelpText(
      'after',
      '\nExamples:\n  retrokube sheets serve --workbook cluster.xlsx   # 127.0.0.1:8787\n  retrokube sheets serve --host 0.0.0.0 --token-file token.txt --key-file signing.key\n',
    )
    .action(async (o) => {
      const warn = (s: string) => process.stderr.write(s);
      const { token, key } = tokenAndKey(o, warn);
      // fastify, the store backends and exceljs load only when a server really starts
      const { serveUntilSignal } = await import('../apiserver/serve.ts');
      await serveUntilSignal({ ...o, token, key });
    });
}

interface CtlFlags {
  server?: string;
  token?: string;
  tokenFile?: string;
  key?: string;
  keyFile?: string;
  output?: string;
}

function addCtlVerbs(ctl: Command, upServer: () => string | undefined): void {
  ctl
    .option(
      '-s, --server <url>',
      'apiserver URL (env WEBAPP_URL, or .skctl.env; else that of the running "retrokube up")',
    )
    .option('--token <t>', 'shared token (env TOKEN, or --token-file)')
    .option('--token-file <file>', 'read the shared token from the first line of FILE')
    .option('--key <k>', 'HMAC signing key (env SIGNING_KEY, or --key-file); requests are signed when set')
    .option('--key-file <file>', 'read the HMAC signing key from the first line of FILE')
    .option('-o, --output <fmt>', 'table or json', 'table')
    .addHelpText(
      'after',
      '\nExamples:\n  retrokube skctl -s http://127.0.0.1:8787 --token-file token.txt get pods\n  retrokube skctl scale web 4\n  retrokube skctl get nodes -o json\n',
    );

  const flags = (): CtlFlags => {
    const o = ctl.opts() as CtlFlags;
    if (o.output !== 'table' && o.output !== 'json') throw new Error(`-o ${o.output}: use table or json`);
    // #28.5: a secret on the command line works (the reference takes one) but every user reads argv in ps
    for (const [flag, given] of [
      ['--token', o.token],
      ['--key', o.key],
    ] as const)
      if (given !== undefined)
        process.stderr.write(
          `warning: ${flag} on the command line is visible to every user of this host (ps); use ${flag === '--token' ? 'TOKEN' : 'SIGNING_KEY'}=… or ${flag}-file FILE\n`,
        );
    if (o.tokenFile) o.token = readSecretFile(o.tokenFile, 'token');
    if (o.keyFile) o.key = readSecretFile(o.keyFile, 'signing key');
    return o;
  };
  const client = () => new SheetsClient(resolveConfig(flags(), process.env, process.cwd(), upServer));
  const print = (reply: unknown): void => {
    process.stdout.write(`${JSON.stringify(reply, null, 2)}\n`);
  };
  const post = async (body: Record<string, unknown>): Promise<void> => print(await client().post(body));

  ctl
    .command('get')
    .argument('[kind]', 'pods | nodes | deployments | gateways | routes | events | metrics', 'pods')
    .description('list objects (events: the last 25, no header)')
    .addHelpText('after', '\nExample:\n  retrokube skctl get nodes\n')
    .action(async (k: string) => {
      const kind = KIND_ALIASES[k];
      if (!kind) throw new Error(`unknown kind: ${k} (use ${Object.keys(KIND_ALIASES).join(', ')})`);
      const items = await client().get(kind);
      if (flags().output === 'json') print({ items });
      else process.stdout.write(renderTable(kind, items));
    });

  ctl
    .command('apply')
    .argument('<file>', 'JSON file with deployments, gateways, routes (and secrets); - for stdin')
    .description('create or update objects from a JSON file')
    .addHelpText(
      'after',
      '\nExample:\n  retrokube skctl apply hello-web.json   # {"deployments":[{"name":"web","image":"nginx:alpine","replicas":2}]}\n',
    )
    .action(async (file: string) => {
      const text = file === '-' ? await readStdin() : await readFile(file, 'utf8');
      let doc: unknown;
      try {
        doc = JSON.parse(text);
      } catch (err) {
        throw new Error(`${file} is not valid JSON: ${(err as Error).message}`);
      }
      if (!doc || typeof doc !== 'object' || Array.isArray(doc))
        throw new Error(
          `${file} must hold a JSON object with "deployments" (and optionally "gateways", "routes", "secrets")`,
        );
      const d = doc as Record<string, unknown>;
      const body: Record<string, unknown> = {
        action: 'apply',
        deployments: d.deployments ?? [],
        gateways: d.gateways ?? [],
        routes: d.routes ?? [],
      };
      if (d.secrets) body.secrets = d.secrets;
      await post(body);
    });

  ctl
    .command('scale')
    .argument('<deployment>')
    .argument('<replicas>', 'a whole number')
    .description('set the replica count')
    .addHelpText('after', '\nExample:\n  retrokube skctl scale web 4\n')
    .action(async (name: string, n: string) => {
      if (!/^\d+$/.test(n)) throw new Error(`replicas "${n}" must be a whole number`);
      await post({ action: 'scale', name, replicas: Number(n) });
    });

  ctl
    .command('delete')
    .argument('<kindOrName>', 'deployment | gateway | route, or a deployment name')
    .argument('[name]')
    .description('delete a deployment (default), gateway or route')
    .addHelpText('after', '\nExamples:\n  retrokube skctl delete web\n  retrokube skctl delete route api\n')
    .action(async (a: string, b?: string) => {
      if (b === undefined) return post({ action: 'delete', kind: 'deployment', name: a });
      if (!['deployment', 'gateway', 'route', 'secret'].includes(a))
        throw new Error(`delete ${a}: the kind must be deployment, gateway, route or secret`);
      return post({ action: 'delete', kind: a, name: b });
    });

  for (const verb of ['cordon', 'uncordon', 'drain'] as const) {
    ctl
      .command(verb)
      .argument('<node>')
      .description(
        verb === 'drain' ? 'cordon the node and move its pods away (make-before-break)' : `${verb} a node`,
      )
      .addHelpText('after', `\nExample:\n  retrokube skctl ${verb} node-a\n`)
      .action(async (name: string) => post({ action: verb, name }));
  }

  ctl
    .command('migrate')
    .argument('<pod>')
    .argument('<node>')
    .description('move one pod to a node; the old copy runs until the new one does')
    .addHelpText('after', '\nExample:\n  retrokube skctl migrate web-1 node-b\n')
    .action(async (pod: string, node: string) => post({ action: 'migrate', name: pod, node }));

  ctl
    .command('label')
    .argument('<node>')
    .argument('<spec>', 'k=v to set, k- to remove')
    .description('set or remove a node label')
    .addHelpText('after', '\nExample:\n  retrokube skctl label node-a disk=ssd\n')
    .action(async (name: string, spec: string) => post({ action: 'label', name, spec }));

  ctl
    .command('taint')
    .argument('<node>')
    .argument('<spec>', 'k=v:NoSchedule to add, k- to remove')
    .description('add or remove a node taint')
    .addHelpText('after', '\nExample:\n  retrokube skctl taint node-a gpu=yes:NoSchedule\n')
    .action(async (name: string, spec: string) => post({ action: 'taint', name, spec }));
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
