// `retrokube up [FILE]`: the embedded default. Reads the OberonKube FILE (or the sample), builds
// the Kube disk, runs the cluster (cluster.ts) with its control endpoint (control.ts), writes the
// state file for the companion verbs, and shows the live cluster table heard on the air until
// Ctrl-C or `retrokube down`. With no FILE the sample Sheeternetes cluster runs alongside.
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ConsoleServer, startConsole } from '../console/server.ts';
import { buildKubeDisk } from '../machine/kube-disk.ts';
import { DEFAULT_TOKEN, SheetsClient } from '../sheets/ctl/client.ts';
import { renderTable } from '../sheets/ctl/table.ts';
import { logger, sendLogsTo } from '../util/log.ts';
import { stopOnSignal } from '../util/process.ts';
import { LocalCluster } from './cluster.ts';
import { startUpControl } from './control.ts';
import { runFleetUp } from './fleet.ts';
import { isFleetText } from './fleet-spec.ts';
import { fitFrame, fitParts, kubeBlocks, type LiveBlock, sheetsBlocks } from './live-view.ts';
import { type LocalSheets, parseSheetsFile, type RunningSheets, startLocalSheets } from './sheets.ts';
import { consoleToken, runUp as runSheetsUp, withPrivateCredentials } from './sheets-up.ts';
import { type LocalKube, parseLocalFile, SAMPLE_YAML } from './spec.ts';
import {
  readUpState,
  removeGivenKey,
  removeUpState,
  LIMITS as STATE_LIMITS,
  stateKey,
  type UpState,
  upVncPassword,
  writeGivenKey,
  writeUpState,
} from './state.ts';

export const LIMITS = {
  redrawMs: 1000, // the live table is redrawn this often (the heartbeat period)
  sheetsPollMs: 1000, // the sheets tables are read this often (an HTTP call on loopback; agents report a change within 0.25 s, #29.6)
  sheetsNodes: 3, // the sample Sheeternetes cluster's node agents
  summaryMs: 10_000, // without a terminal, one summary line this often
  progressShownMs: 15_000, // a start-up progress line stays in the view this long
} as const;

const upLog = logger('up');

/** The terminal's alternate screen (as less and top use), and the cursor hidden while on it. */
const ALT_SCREEN_ON = '\x1b[?1049h\x1b[?25l';
const ALT_SCREEN_OFF = '\x1b[?25h\x1b[?1049l';

import { cliName } from '../util/cli-name.ts';
import type { UpOptions } from './up-options.ts';

export type { UpOptions };

/** Checks --qemu: the names exist ("all" = every machine) and the binary is there. */
export function qemuMachines(
  spec: LocalKube,
  q: UpOptions['qemu'],
): { binary: string; machines: string[] } | undefined {
  if (!q || q.machines.length === 0) return undefined;
  const all = ['plane', ...spec.nodeNames];
  const machines = q.machines.includes('all') ? all : q.machines;
  const unknown = machines.filter((m) => !all.includes(m));
  if (unknown.length > 0)
    throw new Error(`--qemu: no machine ${unknown.join(', ')} in this cluster (machines: ${all.join(', ')})`);
  if (!existsSync(q.binary))
    throw new Error(
      `--qemu: ${q.binary} does not exist; build it with qemu/build.sh (or give --qemu-binary)`,
    );
  return { binary: q.binary, machines };
}

export function loadSpec(file?: string): LocalKube {
  const f = loadFile(file);
  if (!f.kube) throw new Error(`${file} holds no OberonKube`);
  return f.kube;
}

/** The FILE's OberonKube and SheetCluster (either may be absent, not both); default: the sample. */
function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`cannot read ${file}: ${(e as Error).message}`);
  }
}

export function loadFile(file?: string): { kube: LocalKube | null; sheets: LocalSheets | null } {
  if (!file) return { kube: parseLocalFile(SAMPLE_YAML, 'the sample cluster'), sheets: null };
  const text = readText(file);
  const sheets = parseSheetsFile(text, file);
  const hasKube = /^kind:\s*OberonKube\s*$/m.test(text);
  if (!sheets || hasKube) return { kube: parseLocalFile(text, file), sheets };
  return { kube: null, sheets };
}

/** A FILE with only a SheetCluster: its apiserver and agents, the tables until Ctrl-C. */
async function runSheetsOnly(sheets: LocalSheets, o: UpOptions, out: (s: string) => void): Promise<void> {
  const running = await startLocalSheets(sheets, { dir: o.dir, seed: stateKey(o.dir), out });
  let web: ConsoleServer | null = null;
  if (o.consolePort !== null && o.consolePort !== undefined) {
    try {
      web = await startConsole(
        { sheets: { name: String(sheets.cluster.metadata.name ?? 'SheetCluster'), client: running.client } },
        { port: o.consolePort, token: consoleToken(o.dir) },
      );
      out(`web console ${web.openUrl} (loopback only; without its token it is read-only)`);
    } catch (e) {
      out(`the web console did not start (${(e as Error).message}); the cluster runs without it`);
    }
  }
  out(`${cliName()} skctl --server ${running.url} --token <token> get pods   (Ctrl-C stops the cluster)`);
  const show = async () => {
    const [n, p] = await Promise.all([running.client.get('nodes'), running.client.get('pods')]);
    out(`${renderTable('nodes', n)}\n${renderTable('pods', p)}`);
  };
  const timer = setInterval(
    () => void show().catch((e: Error) => out(`(sheets not answering: ${e.message})`)),
    LIMITS.summaryMs,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  clearInterval(timer);
  await web?.close();
  out('stopping the SheetCluster ...');
  await running.stop();
  out(`stopped; the workbook stays in ${o.dir}`);
}

export async function runUp(o: UpOptions): Promise<void> {
  const print = o.out ?? ((s: string) => void process.stdout.write(s.endsWith('\n') ? s : `${s}\n`));
  // While the live view owns the screen, a printed line would land inside its frame (and a terminal
  // that wraps it counts a line of the next frame as its continuation): the line goes to the log
  // and into the view as its progress line instead.
  let onAltScreen = false;
  let lastProgress = '';
  const out = (s: string): void => {
    if (!onAltScreen) print(s);
    else {
      lastProgress = s.trimEnd();
      upLog.info({ line: lastProgress }, 'progress');
    }
  };
  // Several OberonKubes, or Rollouts: a fleet (local/fleet.ts).
  const text = o.file ? readText(o.file) : '';
  if (isFleetText(text)) return runFleetUp(o, text);
  const file = loadFile(o.file);
  if (!file.kube && file.sheets) return runSheetsOnly(file.sheets, o, out);
  const spec = file.kube as LocalKube;
  const running = readUpState(o.dir);
  if (running)
    throw new Error(
      `a cluster is already up in ${o.dir} (pid ${running.pid}); stop it with "${cliName()} down"`,
    );
  // People get the view; the JSON log lines of every part (and of the sample's node agents) go to
  // a file, or to stderr when asked for.
  let agentLog = 2; // stderr
  if (o.logFormat === 'json') sendLogsTo('stderr');
  else {
    const logFile = join(o.dir, STATE_LIMITS.logFile);
    mkdirSync(o.dir, { recursive: true });
    sendLogsTo(logFile);
    // The node agents are processes of their own that print plain lines: a file of their own, so
    // up.log stays JSON lines a program can read.
    agentLog = openSync(join(o.dir, STATE_LIMITS.agentLogFile), 'a');
    out(
      `logs (JSON lines) go to ${logFile}, the node agents' output to ${STATE_LIMITS.agentLogFile} beside it; --log-format json sends both to stderr`,
    );
  }
  const key = spec.key ?? stateKey(o.dir);
  // Where the air verbs (listen, inject) find the key of this cluster while it runs.
  const keyFile = spec.key ? writeGivenKey(o.dir, spec.key) : join(o.dir, STATE_LIMITS.keyFile);
  const t0 = Date.now();
  out(`building the Kube disk (cached after the first run) ...`);
  const disk = await buildKubeDisk();
  out(`Kube disk ${disk.cached ? 'cached' : 'built'} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  const { stopped, stop, release } = stopOnSignal();

  // Every screen needs the password (#28.2); the console logs in with it for holders of its token.
  const vnc = o.vncBase !== null ? upVncPassword(o.dir) : null;
  const cluster = await LocalCluster.start(
    {
      spec,
      key,
      kubeDisk: disk.path,
      kubeDiskKey: disk.key,
      dir: o.dir,
      vncBase: o.vncBase,
      vncPassword: vnc?.password,
      qemu: qemuMachines(spec, o.qemu),
      progress: (line) => {
        out(line);
        lastProgress = line;
      },
    },
    false,
  );
  let sheetsUrl: string | undefined;
  let consoleUrl: string | undefined;
  const state = (): UpState => ({
    pid: process.pid,
    control: control.url,
    air: { host: '127.0.0.1', port: cluster.relay.address.port, control: cluster.airControl, keyFile },
    cluster: spec.cluster,
    machines: cluster.machines().map(({ name, role, vnc, disk: d }) => ({ name, role, vnc, disk: d })),
    sheets: sheetsUrl ? { url: sheetsUrl } : undefined,
    console: consoleUrl,
    vncPasswordFile: vnc?.file,
    startedAt: new Date(t0).toISOString(),
  });
  const control = await startUpControl(cluster, {
    down: () => stop(),
    state: () => ({ ...state(), on: cluster.machines() }),
  });
  writeUpState(o.dir, state());
  out(`air relay on udp/127.0.0.1:${cluster.relay.address.port}, control ${cluster.airControl}`);
  out(`up control ${control.url} (state in ${join(o.dir, 'up.json')})`);
  for (const m of cluster.machines())
    out(
      `${m.name.padEnd(7)} ${m.role.padEnd(5)} disk ${m.disk}${m.vnc !== null ? `  VNC 127.0.0.1:${m.vnc}` : ''}`,
    );
  if (vnc) out(`VNC password: the first line of ${vnc.file} (mode 0600; cat it, or see ${cliName()} status)`);

  // The sample Sheeternetes cluster, in-process, when no FILE was given.
  let sheetsClient: SheetsClient | null = null;
  let sheetsTables = ''; // why the tables are missing (not answering, did not start)
  let sheetsItems: { nodes: Record<string, unknown>[]; pods: Record<string, unknown>[] } | null = null;
  let sheetsDone: Promise<unknown> = Promise.resolve();
  let fileSheets: RunningSheets | undefined;
  if (file.sheets) {
    // The FILE's SheetCluster beside its OberonKube, as the operator would run both.
    fileSheets = await startLocalSheets(file.sheets, { dir: o.dir, seed: stateKey(o.dir), out });
    sheetsUrl = fileSheets.url;
    sheetsClient = fileSheets.client;
    writeUpState(o.dir, state());
  } else if (o.sheets && !o.file) {
    let resolveUrl!: (u: string) => void;
    const urlKnown = new Promise<string>((r) => {
      resolveUrl = r;
    });
    // With --allow-process the sample gets a token and key of its own (0600 files in the state folder).
    const sheetsOpts = withPrivateCredentials(
      {
        nodes: LIMITS.sheetsNodes,
        workbook: join(o.dir, 'sheets.xlsx'),
        port: 0,
        token: DEFAULT_TOKEN,
        waitSec: 0,
        detach: false,
        agentOutput: agentLog,
        allowProcess: o.allowProcess,
        out: (s) => {
          const m = /apiserver listening on (\S+)/.exec(s);
          if (m) resolveUrl(m[1]);
        },
      },
      (s) => out(s.trimEnd()),
    );
    sheetsDone = runSheetsUp(sheetsOpts).catch((e: Error) => {
      sheetsTables = `Sheeternetes did not start: ${e.message}`;
    });
    const url = await Promise.race([urlKnown, new Promise<null>((r) => setTimeout(() => r(null), 30_000))]);
    if (url) {
      sheetsUrl = url;
      sheetsClient = new SheetsClient({ url, token: sheetsOpts.token, key: sheetsOpts.signingKey });
      writeUpState(o.dir, state());
      out(`Sheeternetes apiserver on ${url} (${cliName()} skctl --server ${url} get pods)`);
    }
  }

  let web: ConsoleServer | null = null;
  if (o.consolePort !== null && o.consolePort !== undefined) {
    const first = spec.deployments[0] ?? { name: 'web', replicas: 4, module: 'Ticker' };
    try {
      web = await startConsole(
        {
          kube: {
            name: spec.name,
            cluster: spec.cluster,
            key,
            deployment: { name: first.name, replicas: first.replicas, module: first.module },
            relay: cluster.relay,
            machines: () => cluster.machines(),
            vncPassword: vnc?.password,
            power: (n, on) => cluster.power(n, on),
            type: (n, c) => cluster.type(n, c),
          },
          sheets: sheetsClient ? { name: sheetsUrl ?? 'Sheeternetes', client: sheetsClient } : undefined,
        },
        { port: o.consolePort, token: consoleToken(o.dir) },
      );
      out(`web console ${web.openUrl} (loopback only; without its token it is read-only)`);
      consoleUrl = web.url;
      writeUpState(o.dir, state());
    } catch (e) {
      // The cluster runs on without it: the console is a window, not a part.
      out(`the web console did not start (${(e as Error).message}); the cluster runs without it`);
    }
  }

  const tty = o.view && process.stdout.isTTY === true;
  let lastSummary = 0;
  let progressAt = 0;
  let shownProgress = '';
  const cli = cliName();
  const leaveAltScreen = (): void => {
    if (onAltScreen) process.stdout.write(ALT_SCREEN_OFF);
    onAltScreen = false;
  };
  if (tty) {
    // The view draws on the alternate screen: the start-up lines above (addresses, VNC ports) stay
    // in the terminal's scrollback, and come back when the view ends.
    out(`state: ${o.dir} (disks, workbook, logs) is kept: the next run resumes it; delete it to start fresh`);
    out(`${cli} status lists these addresses again while the cluster runs`);
    process.stdout.write(ALT_SCREEN_ON);
    onAltScreen = true;
    process.once('exit', leaveAltScreen);
  }
  const draw = (): void => {
    const v = cluster.view();
    const on = new Set(
      cluster
        .machines()
        .filter((m) => m.on)
        .map((m) => m.name),
    );
    if (tty) {
      const air = cluster.relay.state();
      const machines = cluster
        .machines()
        .map((m) => `${m.name}${on.has(m.name) ? '' : '(off)'}${m.vnc !== null ? ` vnc:${m.vnc}` : ''}`)
        .join('  ');
      const head = `Kube on Oberon "${spec.name}" (cluster "${spec.cluster}", tag ${v.cluster}) · air ${air.on ? 'on' : 'OFF'}, loss ${Math.round(air.loss * 100)} %${air.cuts.length ? `, cut ${air.cuts.join(',')}` : ''} · up ${Math.round((Date.now() - t0) / 1000)} s`;
      // A progress line is news for a while, not a standing claim (an apply changes what it said).
      if (lastProgress !== shownProgress) {
        shownProgress = lastProgress;
        progressAt = Date.now();
      }
      const blocks: LiveBlock[] = [head];
      if (shownProgress && Date.now() - progressAt < LIMITS.progressShownMs) blocks.push(shownProgress);
      blocks.push(machines, '', ...kubeBlocks(v));
      if (sheetsClient) {
        blocks.push('', `Sheeternetes ${sheetsUrl}`);
        if (sheetsTables) blocks.push(sheetsTables);
        else if (sheetsItems) blocks.push(...sheetsBlocks(sheetsItems.nodes, sheetsItems.pods, Date.now()));
      }
      if (web) blocks.push(`web console ${web.openUrl}`);
      const cols = process.stdout.columns ?? 80;
      const footer = fitParts(
        ['Ctrl-C stops', `${cli} status`, `${cli} machine off node-a`, `${cli} kube apply web 6 Ticker2`],
        cols - 1,
      );
      // Never the last column: a line that fills it leaves the terminal about to wrap, and some
      // (tmux among them) then count it as wrapped into the next line. Trailing padding goes too.
      const lines = fitFrame(blocks, footer, cols - 1, process.stdout.rows ?? 24).map((l) => l.trimEnd());
      process.stdout.write(`\x1b[H${lines.join('\x1b[K\n')}\x1b[K\x1b[J`);
    } else if (Date.now() - lastSummary >= LIMITS.summaryMs) {
      lastSummary = Date.now();
      out(
        `air: nodes ${v.readyNodes}/${v.nodes.length} Ready, pods running ${v.running}, ${v.converged ? 'converged' : 'converging'}`,
      );
    }
  };
  const timer = setInterval(draw, LIMITS.redrawMs);
  const sheetsTimer = setInterval(() => {
    if (!sheetsClient) return;
    const c = sheetsClient;
    Promise.all([c.get('nodes'), c.get('pods')])
      .then(([n, p]) => {
        sheetsItems = { nodes: n, pods: p };
        sheetsTables = '';
      })
      .catch((e: Error) => {
        sheetsTables = `(sheets not answering: ${e.message})`;
      });
  }, LIMITS.sheetsPollMs);

  try {
    await Promise.race([cluster.startAll(), stopped]);
    await stopped;
  } finally {
    clearInterval(timer);
    clearInterval(sheetsTimer);
    leaveAltScreen();
    release();
    out('stopping the cluster ...');
    if (o.sheets && !o.file) {
      process.emit('SIGTERM'); // sheets' own up stops on the signal it listens for
      await Promise.race([sheetsDone, new Promise((r) => setTimeout(r, 10_000))]);
    }
    await web?.close();
    await fileSheets?.stop();
    await control.close();
    await cluster.close();
    removeUpState(o.dir);
    removeGivenKey(o.dir);
    if (agentLog !== 2) closeSync(agentLog);
    out(`stopped; disks kept in ${o.dir}`);
  }
}
