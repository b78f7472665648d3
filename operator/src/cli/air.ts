// `retrokube air ...`: the relay, the passive listener, the injector, and the relay's remote control.
import { type Command, InvalidArgumentError, Option } from 'commander';
import { FORGERY_KINDS, type ForgeryKind, runInjector } from '../air/inject.ts';
import { checkClusterName, keyFromHex } from '../air/kubenet.ts';
import { startListener } from '../air/listen.ts';
import { checkLoss, RELAY_LIMITS, type RelayState, startRelay } from '../air/relay.ts';
import { DEFAULT_CONTROL_PORT, relayControl } from '../air/relay-http.ts';
import { relaySummary } from '../air/relay-summary.ts';
import { parseRelayAddress } from '../air/station.ts';
import { AIR_PORT, fromHex, LIMITS } from '../air/wire.ts';
import { airControlUrl, readUpState, stateDir, type UpAir, upAir } from '../local/state.ts';
import { cliName } from '../util/cli-name.ts';
import { readSecretFile } from '../util/secret-option.ts';

const CLI_LIMITS = {
  /** The relay prints a one-line summary this often (seconds) unless told otherwise. */
  SUMMARY_S: 60,
  /** Default Prometheus port of the relay (next to the air's 7524 and control 7525, in the 9xxx exporter range). */
  METRICS_PORT: 9524,
} as const;

const out = (s: string): void => void process.stdout.write(s.endsWith('\n') ? s : `${s}\n`);

function intIn(name: string, lo: number, hi: number): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < lo || n > hi)
      throw new InvalidArgumentError(`${name} must be a whole number ${lo}..${hi}`);
    return n;
  };
}

function probability(v: string): number {
  const n = Number(v);
  try {
    return checkLoss(n);
  } catch {
    throw new InvalidArgumentError(`"${v}" is not a probability between 0 and 1 (for example 0.3)`);
  }
}

function key(v: string): Uint8Array {
  try {
    return keyFromHex(v);
  } catch (e) {
    throw new InvalidArgumentError((e as Error).message);
  }
}

function cluster(v: string): string {
  try {
    checkClusterName(v);
  } catch (e) {
    throw new InvalidArgumentError((e as Error).message);
  }
  return v;
}

function ids(v: string): number[] {
  const list = v.trim() === '' ? [] : v.split(',').map((x) => Number(x.trim()));
  if (
    list.length > LIMITS.PODS_PER_NODE ||
    list.some((x) => !Number.isInteger(x) || x < 1 || x > LIMITS.MAX_POD_ID)
  ) {
    throw new InvalidArgumentError(
      `ids must be up to ${LIMITS.PODS_PER_NODE} comma-separated pod ids 1..255, or "" for none`,
    );
  }
  return list;
}

const isLoopbackHost = (h: string): boolean => /^(127\.\d+\.\d+\.\d+|::1|localhost)$/.test(h);

/**
 * #28.11: the control endpoint has no authentication, so beyond loopback it needs the explicit
 * `--insecure-control` (and is warned about); undefined when BIND is fine.
 */
export function controlBindProblem(bind: string, insecure: boolean): string | undefined {
  if (isLoopbackHost(bind) || insecure) return undefined;
  return `--control-bind ${bind}: the relay's control endpoint has no authentication, and whoever reaches it can switch the air off. Keep it on 127.0.0.1 (reach it with kubectl port-forward or ssh -L), or add --insecure-control if you really mean it`;
}

const controlOption = (): Option =>
  new Option(
    '--control <url>',
    'control endpoint of the relay (default $RETROKUBE_AIR_CONTROL, else the relay of the running "retrokube up"; never a guess)',
  );
const stateOption = (): Option =>
  new Option(
    '--state <dir>',
    'state folder of the running "retrokube up" (default $RETROKUBE_STATE, $XDG_STATE_HOME/retrokube or ./.retrokube)',
  );

const err = (s: string): void => void process.stderr.write(`${s}\n`);

/**
 * The cluster key of `air listen`/`air inject` (#28.5): --key-file, else --key (warned: argv is
 * visible to every user in ps), else $RK_KEY; undefined when none (the running up's, or all zero).
 */
export function airKey(
  o: { key?: Uint8Array; keyFile?: string },
  env: NodeJS.ProcessEnv = process.env,
  warn: (line: string) => void = err,
): Uint8Array | undefined {
  if (o.keyFile !== undefined) {
    if (o.key !== undefined) throw new Error('give --key or --key-file, not both');
    return key(readSecretFile(o.keyFile, 'cluster key'));
  }
  if (o.key !== undefined) {
    warn(
      'warning: --key on the command line is visible to every user of this host (ps); use RK_KEY=… or --key-file FILE',
    );
    return o.key;
  }
  return env.RK_KEY ? key(env.RK_KEY) : undefined;
}

/**
 * Where a station listens and with which key: the RELAY given, else the running `up`'s air (its
 * relay, cluster and key from the state folder). --key and --cluster given on the command line win.
 */
export function stationTarget(
  relayText: string | undefined,
  o: { state?: string; key?: Uint8Array; cluster?: string },
): { host: string; port: number; key?: Uint8Array; cluster: string; note?: string; up?: UpAir } {
  const dir = stateDir(o.state);
  const st = readUpState(dir);
  const up = st ? upAir(st) : undefined;
  if (relayText === undefined) {
    if (!up)
      throw new Error(
        `no running "retrokube up" found in ${dir}: start one with "${cliName()} up" (or pass --state DIR), or give the relay: ${cliName()} air listen HOST[:PORT] --key-file FILE`,
      );
    return {
      host: up.host,
      port: up.port,
      key: o.key ?? (up.keyHex ? keyFromHex(up.keyHex) : undefined),
      cluster: o.cluster ?? up.cluster,
      up,
    };
  }
  const { host, port } = parseRelayAddress(relayText);
  const note =
    up && (up.port !== port || up.host !== host)
      ? `note: the running "retrokube up" has its air at ${up.host}:${up.port}; leave out the address to listen there with its key`
      : undefined;
  return { host, port, key: o.key, cluster: o.cluster ?? 'kube', note, up };
}

/** The one line a station prints when it hears nothing at all. */
export function silenceLine(host: string, port: number, ms: number, up?: UpAir): string {
  const hint =
    up && (up.host !== host || up.port !== port)
      ? ` (the running "retrokube up" has its air at ${up.host}:${up.port})`
      : up
        ? ' (are the machines of "retrokube up" switched on?)'
        : ` (start one with "${cliName()} up" or "${cliName()} air relay")`;
  return `heard nothing on the air at ${host}:${port} for ${Math.round(ms / 1000)} s: is a relay running there with stations on it?${hint}`;
}

function printState(st: RelayState, json: boolean): void {
  if (json) {
    out(JSON.stringify(st, null, 2));
    return;
  }
  out(relaySummary(st.stats, st.loss, st.on));
  if (st.cuts.length) out(`cut off the air: ${st.cuts.join(', ')}`);
  out(
    `${'STATION'.padEnd(22)} ${'NAME'.padEnd(7)} ${'ROLE'.padEnd(6)} ${'FRAMES'.padStart(7)} ${'HEARD'.padStart(7)} CUT`,
  );
  const now = Math.max(0, ...st.peers.map((p) => p.lastSeenMs));
  for (const p of st.peers) {
    const role = p.plane ? 'plane' : p.name ? 'node' : '-';
    const ago = `${((now - p.lastSeenMs) / 1000).toFixed(1)}s`;
    out(
      `${p.address.padEnd(22)} ${(p.name ?? '-').padEnd(7)} ${role.padEnd(6)} ${String(p.framesIn).padStart(7)} ${ago.padStart(7)} ${p.cut ? 'yes' : ''}`,
    );
  }
}

export function registerAirVerbs(program: Command): void {
  const air = program
    .command('air')
    .description("the air: the UDP relay that carries Wirth's radio frames, and tools to listen and intrude");

  air
    .command('relay')
    .description('run the air: forward every 33-byte frame to every other station')
    .addOption(
      new Option('--port <n>', 'UDP port of the air').argParser(intIn('port', 0, 65535)).default(AIR_PORT),
    )
    .option('--bind <addr>', 'address to bind the air on', '0.0.0.0')
    .addOption(
      new Option('--loss <p>', 'drop each delivery with this probability').argParser(probability).default(0),
    )
    .addOption(
      new Option('--metrics-port <n>', 'Prometheus /metrics TCP port')
        .argParser(intIn('metrics port', 0, 65535))
        .default(CLI_LIMITS.METRICS_PORT),
    )
    .option('--metrics-bind <addr>', 'address for /metrics', '0.0.0.0')
    .option('--no-metrics', 'serve no /metrics')
    .addOption(
      new Option('--control-port <n>', 'control endpoint TCP port')
        .argParser(intIn('control port', 0, 65535))
        .default(DEFAULT_CONTROL_PORT),
    )
    .option(
      '--control-bind <addr>',
      'address for the control endpoint (loopback: whoever reaches it can silence the air)',
      '127.0.0.1',
    )
    .option('--no-control', 'serve no control endpoint')
    .option(
      '--insecure-control',
      'allow --control-bind beyond loopback: the control endpoint has no authentication (warned)',
    )
    .addOption(
      new Option('--summary <s>', 'seconds between summary lines (0 = none)')
        .argParser(intIn('summary', 0, 86400))
        .default(CLI_LIMITS.SUMMARY_S),
    )
    .option(
      '--no-rate-limit',
      `the raw air, as the reference relay: no per-station ceiling (default ${RELAY_LIMITS.RATE_PER_SECOND} frames/s, burst ${RELAY_LIMITS.RATE_BURST}) and no air-wide budget`,
    )
    .option(
      '--send-thread',
      'make part of the deliveries from a second thread, on another core (IPv4; its socket shares the port: SO_REUSEPORT)',
    )
    .option('-v, --verbose', 'print a line per frame')
    .addHelpText(
      'after',
      `
Examples:
  retrokube air relay                          # udp/7524, control on 127.0.0.1:7525, metrics on :9524
  retrokube air relay --port 0 --loss 0.3      # a free port and a lossy air, as in the DR test
  retrokube air loss 0 --control http://127.0.0.1:7525`,
    )
    .action(async (o) => {
      if (o.control) {
        const problem = controlBindProblem(o.controlBind, Boolean(o.insecureControl));
        if (problem) throw new Error(problem);
        if (!isLoopbackHost(o.controlBind))
          out(
            `WARNING: the relay's control endpoint on ${o.controlBind} has no authentication: anyone who reaches it can switch the air off or cut stations (--insecure-control)`,
          );
      }
      const relay = await startRelay({
        port: o.port,
        bind: o.bind,
        loss: o.loss,
        rate: o.rateLimit ? undefined : null,
        sendThread: Boolean(o.sendThread),
        metricsPort: o.metrics ? o.metricsPort : undefined,
        metricsBind: o.metricsBind,
        controlPort: o.control ? o.controlPort : undefined,
        controlBind: o.controlBind,
        frameEvents: Boolean(o.verbose),
        onEvent: (e) => {
          if (e.type === 'joined') out(`station ${e.peer.address} joined`);
          else if (e.type === 'gone') out(`station ${e.peer.address} gone`);
          else out(`${e.from.address} ch ${e.channel} -> ${e.receivers} stations`);
        },
      });
      out(`air relay on udp/${relay.address.port}${o.loss > 0 ? `, loss ${Math.round(o.loss * 100)}%` : ''}`);
      if (relay.control) out(`control on ${relay.control.url}`);
      if (relay.metrics) out(`metrics on ${relay.metrics.url}/metrics`);
      const summary =
        o.summary > 0
          ? setInterval(() => out(relaySummary(relay.stats(), relay.loss(), relay.isOn())), o.summary * 1000)
          : undefined;
      await new Promise<void>((resolve) => {
        const stop = (): void => resolve();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
      if (summary) clearInterval(summary);
      out(relaySummary(relay.stats(), relay.loss(), relay.isOn()));
      await relay.close();
    });

  air
    .command('listen')
    .description('a passive station: decode every frame, verify MACs and counters, show the cluster view')
    .argument(
      '[relay]',
      'relay HOST[:PORT] (port 7524 by default); default: the air of the running "retrokube up"',
    )
    .addOption(
      new Option(
        '--key <hex>',
        'cluster key, up to 16 hex digits (argv is visible in ps: prefer --key-file or RK_KEY; default: the running "up"\'s key, else the all-zero key)',
      ).argParser(key),
    )
    .option('--key-file <file>', 'read the cluster key from the first line of FILE (or set RK_KEY)')
    .addOption(
      new Option(
        '--cluster <name>',
        'cluster name (its tag selects the frames; default: the running "up"\'s, else kube)',
      ).argParser(cluster),
    )
    .addOption(stateOption())
    .addOption(new Option('--json', 'one JSON object per frame').conflicts('table'))
    .addOption(new Option('--table', 'redraw the cluster view in place every second').conflicts('json'))
    .addOption(
      new Option('--duration <s>', 'stop after this many seconds and print the view').argParser(
        intIn('duration', 1, 86400 * 365),
      ),
    )
    .addHelpText(
      'after',
      `
Examples:
  retrokube air listen                                           # the air of the running "retrokube up"
  retrokube air listen 127.0.0.1 --key-file kube.key             # a line per frame (key: first line of the file)
  retrokube air listen relay:7524 --cluster lab --table          # the live cluster view
  retrokube air listen 127.0.0.1 --json --duration 30 > air.jsonl

JSON lines carry t (ms since the epoch), ch, dadr, sadr, typ, len, raw (hex of the datagram),
kind, cluster, node, ids, id, image, counter, auth, fresh and verdict (ok, forged, stale,
other-cluster, malformed, not-kube). On exit a last line {"view": ...} holds the cluster view.`,
    )
    .action(async (relayText: string | undefined, o) => {
      o.key = airKey(o);
      const t = stationTarget(relayText, o);
      if (t.note) err(t.note);
      const { host, port } = t;
      const output = o.json ? 'json' : o.table ? 'table' : 'text';
      const listener = await startListener({
        host,
        port,
        cluster: t.cluster,
        key: t.key,
        output,
        onSilence: (ms) => err(silenceLine(host, port, ms, t.up)),
      });
      if (output === 'text')
        out(
          `listening on the air at ${host}:${port} as udp/${listener.station.local.port} (cluster ${t.cluster}${t.up && !relayText ? ', from the running "retrokube up"' : ''})`,
        );
      await new Promise<void>((resolve) => {
        const timer = o.duration ? setTimeout(resolve, o.duration * 1000) : undefined;
        const stop = (): void => {
          if (timer) clearTimeout(timer);
          resolve();
        };
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
      await listener.close();
      const v = listener.view();
      if (output === 'json') out(JSON.stringify({ view: v }));
      else if (output === 'text') {
        const c = v.counts;
        out(
          `${c.frames} frames: ${c.ok} ok, ${c.forged} forged, ${c.stale} stale, ${c.otherCluster} other cluster, ${c.malformed} malformed`,
        );
      }
    });

  air
    .command('inject')
    .description("the intruder of the DR test: forgeries sent right after the plane's assignment to a node")
    .argument('[relay]', 'relay HOST[:PORT]; default: the air of the running "retrokube up"')
    .requiredOption('--node <name>', 'node whose assignments trigger the forgeries')
    .addOption(
      new Option('--cluster <name>', 'cluster name (default: the running "up"\'s, else kube)').argParser(
        cluster,
      ),
    )
    .addOption(
      new Option(
        '--key <hex>',
        'the real cluster key (argv is visible in ps: prefer --key-file or RK_KEY; default: the running "up"\'s key, else all zero)',
      ).argParser(key),
    )
    .option('--key-file <file>', 'read the real cluster key from the first line of FILE (or set RK_KEY)')
    .addOption(stateOption())
    .addOption(
      new Option('--forge <kind...>', 'forgeries to send after each assignment')
        .choices([...FORGERY_KINDS])
        .default([]),
    )
    .addOption(
      new Option('--wrong-key <hex>', 'key of a wrong-key forgery (default: the real key XOR a5)').argParser(
        key,
      ),
    )
    .addOption(
      new Option('--raw <hex...>', 'verbatim 33-byte frames to send too (e.g. a recorded genuine frame)'),
    )
    .addOption(
      new Option('--ids <list>', 'ids of the forged assignment ("" = run nothing)')
        .argParser(ids)
        .default([]),
    )
    .addOption(
      new Option('--ahead <k>', 'forged counter = heard plane counter + k')
        .argParser(intIn('ahead', 0, 32767))
        .default(2),
    )
    .addOption(
      new Option('--rounds <r>', 'inject after this many assignments')
        .argParser(intIn('rounds', 1, 1000))
        .default(1),
    )
    .addOption(
      new Option('--skip <k>', 'assignments to only record first (replay material)')
        .argParser(intIn('skip', 0, 1000))
        .default(0),
    )
    .addOption(
      new Option('--timeout <s>', 'give up after this many seconds')
        .argParser(intIn('timeout', 1, 3600))
        .default(30),
    )
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      `
Forgery kinds: other-cluster (tag + 1, real key), zero-key ("unsigned"), wrong-key, replay (an earlier
genuine assignment of the node with other ids), signed (real key, counter = heard + ahead: obeyed).

Examples:
  retrokube air inject --node node-a --forge signed               # the air of the running "retrokube up"
  retrokube air inject 127.0.0.1 --node node-a --key-file kube.key --forge other-cluster --rounds 3
  RK_KEY=$(cat kube.key) retrokube air inject 127.0.0.1 --node node-a --forge replay --skip 5
  retrokube air inject 127.0.0.1 --node node-a --raw 0501ff2a61...`,
    )
    .action(async (relayText: string | undefined, o) => {
      o.key = airKey(o);
      const t = stationTarget(relayText, o);
      if (t.note) err(t.note);
      const { host, port } = t;
      const raw = ((o.raw as string[] | undefined) ?? []).map((h) => {
        const b = fromHex(h);
        if (b.length !== LIMITS.DATAGRAM_BYTES)
          throw new Error(
            `--raw frame must be ${LIMITS.DATAGRAM_BYTES} bytes (66 hex digits), got ${b.length}`,
          );
        return b;
      });
      const res = await runInjector({
        host,
        port,
        node: o.node,
        cluster: t.cluster,
        key: t.key,
        onSilence: (ms) => err(silenceLine(host, port, ms, t.up)),
        wrongKey: o.wrongKey,
        forgeries: o.forge as ForgeryKind[],
        raw,
        ids: o.ids,
        ahead: o.ahead,
        rounds: o.rounds,
        skip: o.skip,
        timeoutMs: o.timeout * 1000,
        onInject: o.json
          ? undefined
          : (e) =>
              out(
                `round ${e.round}: ${e.forgery.kind} ${e.raw}${e.forgery.note ? `  (${e.forgery.note})` : ''}`,
              ),
      });
      if (o.json) out(JSON.stringify(res));
      else out(`injected after ${res.rounds} assignments`);
      if (res.timedOut)
        throw new Error(`heard only ${res.assignmentsHeard} assignments to ${o.node} in ${o.timeout} s`);
    });

  const controlVerb = (name: string, description: string, example: string) =>
    air
      .command(name)
      .description(description)
      .addOption(controlOption())
      .addOption(stateOption())
      .option('-o, --output <format>', 'table or json', 'table')
      .addHelpText('after', `\nExample:\n  ${example}`);
  const controlOf = (o: { control?: string; state?: string }) => airControlUrl(o.control, stateDir(o.state));
  const show = (o: { output: string }) => (st: RelayState) => printState(st, o.output === 'json');

  controlVerb('state', "show the relay's stations, loss and counters", 'retrokube air state -o json').action(
    async (o) => show(o)(await relayControl(controlOf(o), 'state')),
  );
  controlVerb(
    'off',
    'switch the air off: stop forwarding (keep the peer table unless --forget)',
    'retrokube air off --forget',
  )
    .option('--forget', 'also forget every station, as when the relay is replaced')
    .action(async (o) =>
      show(o)(await relayControl(controlOf(o), 'off', { forgetPeers: Boolean(o.forget) })),
    );
  controlVerb('on', 'switch the air on again', 'retrokube air on').action(async (o) =>
    show(o)(await relayControl(controlOf(o), 'on')),
  );
  controlVerb('loss', 'set the probability of dropping each delivery', 'retrokube air loss 0.3')
    .argument('<p>', 'probability 0..1', probability)
    .action(async (p: number, o) => show(o)(await relayControl(controlOf(o), 'loss', { loss: p })));
  controlVerb('cut', 'cut one station off the air (by node name, IP:PORT or IP)', 'retrokube air cut node-a')
    .argument('<station>', 'node name heard in heartbeats, IP:PORT or IP')
    .action(async (t: string, o) => show(o)(await relayControl(controlOf(o), 'cut', { target: t })));
  controlVerb('restore', 'put a cut station back on the air ("*" for all)', 'retrokube air restore node-a')
    .argument('<station>', 'as given to cut, or "*"')
    .action(async (t: string, o) => show(o)(await relayControl(controlOf(o), 'restore', { target: t })));
}
