// `retrokube up [FILE]` and its companion verbs: down, machine off|on NAME, kube apply|get,
// screen NAME. The air verbs (air off|on|loss|cut) find the running `up`'s relay by themselves.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type Command, InvalidArgumentError } from 'commander';
import { formatView } from '../air/view.ts';
import { requireUp, stateDir, upRequest } from '../local/state.ts';
import { formatStatus } from '../local/status.ts';
import { cliName } from '../util/cli-name.ts';

const out = (s: string): void => void process.stdout.write(s.endsWith('\n') ? s : `${s}\n`);

function port(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65000)
    throw new InvalidArgumentError('must be a TCP port 0..65000 (0 = any free port)');
  return n;
}

const stateOption = (c: Command): Command =>
  c.option(
    '--state <dir>',
    'state folder of the running cluster (default $RETROKUBE_STATE, $XDG_STATE_HOME/retrokube or ./.retrokube)',
  );

/** The binary qemu/build.sh built (its --print-path; the file may not exist yet). */
function builtQemu(): string {
  const script = fileURLToPath(new URL('../../../qemu/build.sh', import.meta.url));
  return execFileSync('bash', [script, '--print-path'], { encoding: 'utf8' }).trim();
}

export function registerUpVerbs(program: Command): void {
  stateOption(
    program
      .command('up')
      .description(
        'run an Oberon cluster on this machine (air, plane, nodes) and show it live as heard on the air',
      )
      .argument(
        '[file]',
        'YAML with an OberonKube and/or a SheetCluster (and optional OberonAir, Secret); default: the sample clusters',
      ),
  )
    .option('--vnc-base <port>', 'VNC port of the plane; node i gets PORT+i (default: any free ports)', port)
    .option('--no-vnc', 'serve no VNC (less host CPU)')
    .option('--no-view', 'print progress lines instead of redrawing the live table')
    .option('--no-sheets', 'with no FILE, do not run the sample Sheeternetes cluster alongside')
    .option(
      '--qemu <machines>',
      'run these machines (comma-separated, or "all") as qemu-system-risc5, our QEMU model (qemu/)',
    )
    .option('--qemu-binary <path>', 'the qemu-system-risc5 to run (default: what qemu/build.sh built)')
    .option(
      '--log-format <format>',
      'human: the console shows the view, JSON logs go to up.log in the state folder; json: JSON logs to stderr',
      'human',
    )
    .option(
      '--allow-process',
      'the sample Sheeternetes nodes offer the process runtime (a pod with image "process" runs its command on this host)',
    )
    .option('--console-port <port>', 'port of the web console on 127.0.0.1 (default: any free port)', port)
    .option('--no-console', 'serve no web console')
    .addHelpText(
      'after',
      `
Examples:
  retrokube up                      # the sample clusters: Oberon plane + 3 nodes, and Sheeternetes
  retrokube up cluster.yaml --vnc-base 5900
  retrokube up sheets.yaml            # a SheetCluster: its apiserver and agents as local processes
  retrokube up cluster.yaml --qemu plane,node-a   # two machines in QEMU, the rest emulated
  retrokube machine off node-a      # from another terminal: break it
  retrokube kube get                # the cluster as heard on the air
  retrokube down`,
    )
    .action(
      async (
        file: string | undefined,
        o: {
          state?: string;
          vncBase?: number;
          vnc: boolean;
          view: boolean;
          sheets: boolean;
          qemu?: string;
          qemuBinary?: string;
          logFormat: string;
          allowProcess?: boolean;
          consolePort?: number;
          console: boolean;
        },
      ) => {
        if (o.logFormat !== 'human' && o.logFormat !== 'json')
          throw new Error(`--log-format ${o.logFormat} is not known; use human or json`);
        // Loaded on use: `up` reaches the rollout runner and with it the Kubernetes client, which
        // every other verb (the air relay in a 64Mi pod) would otherwise load at start.
        const { runUp } = await import('../local/up.ts');
        await runUp({
          qemu: o.qemu
            ? { machines: o.qemu.split(',').map((m) => m.trim()), binary: o.qemuBinary ?? builtQemu() }
            : undefined,
          logFormat: o.logFormat,
          file,
          dir: stateDir(o.state),
          vncBase: o.vnc ? (o.vncBase ?? 0) : null,
          view: o.view,
          sheets: o.sheets,
          allowProcess: Boolean(o.allowProcess),
          consolePort: o.console ? (o.consolePort ?? 0) : null,
        });
      },
    );

  stateOption(
    program
      .command('down')
      .description('stop the cluster started by "retrokube up" (disks stay in the state folder)'),
  )
    .addHelpText('after', '\nExample:\n  retrokube down')
    .action(async (o: { state?: string }) => {
      const st = requireUp(stateDir(o.state));
      await upRequest(st, 'POST', '/down');
      // Wait until the process is gone, so a following `up` finds the folder free.
      for (let i = 0; i < 600; i++) {
        try {
          process.kill(st.pid, 0);
        } catch {
          out('down');
          return;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`retrokube up (pid ${st.pid}) did not stop within 60 s`);
    });

  stateOption(
    program
      .command('status')
      .description(
        'where the running "retrokube up" listens: web console, apiserver, air, control, VNC of each machine',
      ),
  )
    .option('-o, --output <format>', 'table or json', 'table')
    .addHelpText('after', '\nExample:\n  retrokube status')
    .action((o: { state?: string; output: string }) => {
      if (o.output !== 'table' && o.output !== 'json')
        throw new Error(`-o ${o.output} is not known; use table or json`);
      const dir = stateDir(o.state);
      const st = requireUp(dir);
      out(o.output === 'json' ? JSON.stringify(st, null, 2) : formatStatus(st, dir, cliName()));
    });

  const machine =
    program.commands.find((c) => c.name() === 'machine') ??
    program.command('machine').description('RISC5 machines');
  for (const on of [false, true]) {
    stateOption(
      machine
        .command(on ? 'on' : 'off')
        .description(
          on
            ? 'power a machine of the running cluster on (boots from its disk with its role commands)'
            : 'power a machine of the running cluster off (at once, as pulling the plug)',
        )
        .argument('<name>', 'plane, node-a, node-b, ...'),
    )
      .addHelpText('after', `\nExample:\n  retrokube machine ${on ? 'on' : 'off'} node-a`)
      .action(async (name: string, o: { state?: string }) => {
        const st = requireUp(stateDir(o.state));
        await upRequest(st, 'POST', '/machine', { name, on });
        out(`${name} ${on ? 'on' : 'off'}`);
      });
  }

  const kube = program
    .command('kube')
    .description('the running Oberon cluster: steer it and see it as heard on the air');
  stateOption(
    kube
      .command('apply')
      .description(
        'type "Kube.Apply NAME REPLICAS MODULE" into the plane and middle-click it, as a person would',
      )
      .argument('<name>', 'deployment name')
      .argument('<replicas>', 'number of pods')
      .argument('<module>', 'Oberon module the pods run (Ticker, Ticker2, ...)'),
  )
    .addHelpText('after', '\nExample:\n  retrokube kube apply web 6 Ticker2')
    .action(async (name: string, replicas: string, module: string, o: { state?: string }) => {
      const st = requireUp(stateDir(o.state));
      const r = (await (
        await upRequest(st, 'POST', '/apply', { deployment: `${name} ${replicas} ${module}` })
      ).json()) as {
        typed: string;
      };
      out(`typed into the plane: ${r.typed}`);
    });
  stateOption(kube.command('get').description('the cluster as heard on the air: nodes, pods, convergence'))
    .option('-o, --output <format>', 'table or json', 'table')
    .option('--cluster <name>', 'with a fleet FILE: which cluster (default: the first)')
    .addHelpText('after', '\nExample:\n  retrokube kube get -o json')
    .action(async (o: { state?: string; output: string; cluster?: string }) => {
      if (o.output !== 'table' && o.output !== 'json')
        throw new Error(`-o ${o.output} is not known; use table or json`);
      const st = requireUp(stateDir(o.state));
      const q = o.cluster ? `?cluster=${encodeURIComponent(o.cluster)}` : '';
      const v = await (await upRequest(st, 'GET', `/view${q}`)).json();
      out(
        o.output === 'json' ? JSON.stringify(v, null, 2) : formatView(v as Parameters<typeof formatView>[0]),
      );
    });

  stateOption(
    program
      .command('screen')
      .description("a PNG of a machine's screen")
      .argument('<name>', 'plane, node-a, ...'),
  )
    .option('--out <file>', 'PNG file to write (default NAME.png)')
    .addHelpText('after', '\nExample:\n  retrokube screen plane --out plane.png')
    .action(async (name: string, o: { state?: string; out?: string }) => {
      const st = requireUp(stateDir(o.state));
      const res = await upRequest(st, 'GET', `/screen?name=${encodeURIComponent(name)}`);
      const file = o.out ?? `${name}.png`;
      writeFileSync(file, Buffer.from(await res.arrayBuffer()));
      out(`screen of ${name} written to ${file}`);
    });
}
