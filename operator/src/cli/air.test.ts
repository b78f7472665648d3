import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { assignDatagram, clusterTag, heartbeatDatagram, keyFromHex, specDatagram } from '../air/kubenet.ts';
import type { RelayState } from '../air/relay.ts';
import { startRelay } from '../air/relay.ts';
import { openStation } from '../air/station.ts';

const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));
const NODE = process.execPath;
const KEY_HEX = '0123456789abcdef';
const KEY = keyFromHex(KEY_HEX);
const TAG = clusterTag('kube');

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

// The verbs look for a running `up` in the state folder: tests point them at their own (or none).
const ENV = { ...process.env, RETROKUBE_AIR_CONTROL: '', RETROKUBE_STATE: join(tmpdir(), 'rk-air-no-up') };

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(NODE, [MAIN, ...args], { timeout: 90_000, env: ENV }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Starts a long-running verb and resolves once its stdout matches `ready`. */
function start(
  args: string[],
  ready: RegExp,
): Promise<{ proc: ChildProcess; out: () => string; match: RegExpMatchArray }> {
  const proc = spawn(NODE, [MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: ENV });
  let text = '';
  let err = '';
  cleanup.push(
    () =>
      new Promise<void>((r) => {
        if (proc.exitCode !== null) return r();
        proc.once('exit', () => r());
        proc.kill('SIGTERM');
      }),
  );
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no "${ready}" from ${args[1]}: ${text} ${err}`)),
      90_000,
    );
    proc.stderr!.on('data', (d) => {
      err += d;
    });
    proc.stdout!.on('data', (d) => {
      text += d;
      const m = text.match(ready);
      if (m) {
        clearTimeout(timer);
        resolve({ proc, out: () => text, match: m });
      }
    });
    proc.once('exit', (code) => reject(new Error(`${args[1]} exited ${code}: ${err}`)));
  });
}

describe('retrokube air verbs as real processes', () => {
  it('relay, listen --json, inject and the control verbs work together', async () => {
    const relay = await start(
      [
        'air',
        'relay',
        '--port',
        '0',
        '--bind',
        '127.0.0.1',
        '--control-port',
        '0',
        '--metrics-port',
        '0',
        '--metrics-bind',
        '127.0.0.1',
        '--summary',
        '0',
      ],
      /air relay on udp\/(\d+)\ncontrol on (\S+)\nmetrics on (\S+)\n/,
    );
    const port = Number(relay.match[1]);
    const control = relay.match[2];
    const metrics = relay.match[3];

    // a plane and a node in this process: assignments and specs from one, heartbeats from the other
    const plane = await openStation({ host: '127.0.0.1', port, bind: '127.0.0.1', helloIntervalMs: 0 });
    const node = await openStation({ host: '127.0.0.1', port, bind: '127.0.0.1', helloIntervalMs: 0 });
    cleanup.push(
      () => plane.close(),
      () => node.close(),
    );
    let pc = 100;
    let nc = 5;
    const timer = setInterval(() => {
      void plane.send(assignDatagram({ cluster: TAG, node: 'node-a', ids: [1, 2], counter: pc++ }, KEY));
      void plane.send(specDatagram({ cluster: TAG, podId: 1, image: 'Ticker', counter: pc++ }, KEY));
      void node.send(heartbeatDatagram({ cluster: TAG, node: 'node-a', ids: [1, 2], counter: nc++ }, KEY));
    }, 150);
    cleanup.push(() => clearInterval(timer));

    // the listener joins while the plane runs; once it prints a frame it hears the air,
    // and only then does the injector start (so the listener hears every forgery)
    const listen = await start(['air', 'listen', `127.0.0.1:${port}`, '--key', KEY_HEX, '--json'], /\n/);
    const inject = cli([
      ...['air', 'inject', `127.0.0.1:${port}`, '--node', 'node-a', '--key', KEY_HEX],
      ...['--forge', 'zero-key', 'signed', '--skip', '2', '--json', '--timeout', '60'],
    ]);
    const inj = await inject;
    expect(inj.code, inj.stderr).toBe(0);
    const result = JSON.parse(inj.stdout);
    expect(result.injected.map((i: { kind: string }) => i.kind)).toEqual(['zero-key', 'signed']);
    // On a loaded host the listener may still have the forgeries queued in its socket: give it time
    // to print them before anything else changes the air (a listener that never hears them fails below).
    const heard = (raw: string) => listen.out().includes(raw);
    for (let t = 0; t < 300 && !result.injected.every((i: { raw: string }) => heard(i.raw)); t++) {
      await new Promise((r) => setTimeout(r, 100));
    }

    // control verbs, side by side
    const [loss, cut, bad] = await Promise.all([
      cli(['air', 'loss', '0.5', '--control', control, '-o', 'json']),
      cli(['air', 'cut', 'node-a', '--control', control]),
      cli(['air', 'loss', '2', '--control', control]),
    ]);
    expect(loss.code).toBe(0);
    expect(JSON.parse(loss.stdout).loss).toBe(0.5);
    expect(cut.stdout).toMatch(/cut off the air: node-a/);
    expect(cut.stdout).toMatch(/node-a\s+node/);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/probability between 0 and 1/);
    const state = (await (await fetch(`${control}/state`)).json()) as RelayState;
    expect(state.loss).toBe(0.5);
    expect(state.peers.find((p) => p.name === 'node-a')?.cut).toBe(true);
    expect(state.peers.some((p) => p.plane)).toBe(true);
    const m = await (await fetch(`${metrics}`)).text();
    expect(m).toMatch(/^air_relay_frames_in_total \d+$/m);
    expect(m).toMatch(/^air_relay_dropped_total\{reason="cut"\} \d+$/m);

    // the listener's JSON lines judge the forgeries, and its final line carries the view
    const exited = new Promise<void>((r) => listen.proc.once('exit', () => r()));
    listen.proc.kill('SIGTERM');
    await exited;
    const lines = listen
      .out()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const byRaw = new Map(lines.filter((l) => l.raw).map((l) => [l.raw, l]));
    const [zero, signed] = result.injected;
    expect(byRaw.get(zero.raw).verdict).toBe('forged');
    expect(byRaw.get(signed.raw).verdict).toBe('ok');
    expect(lines.some((l) => l.kind === 'spec' && l.image === 'Ticker' && l.auth === true)).toBe(true);
    const final = lines.at(-1).view;
    expect(final.nodes[0]).toMatchObject({ name: 'node-a', running: [1, 2] });
    expect(final.pods[0]).toMatchObject({ id: 1, image: 'Ticker' });
    expect(final.counts.forged).toBeGreaterThanOrEqual(1);
  }, 180_000);

  it('explains bad arguments in one line and exits non-zero', async () => {
    const [r1, r2, r3, r4] = await Promise.all([
      cli(['air', 'listen', '127.0.0.1', '--key', 'xyz']),
      cli(['air', 'inject', '127.0.0.1', '--node', 'a', '--ids', '0']),
      cli(['air', 'state', '--control', 'http://127.0.0.1:1']),
      cli(['air', 'listen', 'host:99999']),
    ]);
    expect(r1.code).not.toBe(0);
    expect(r1.stderr).toMatch(/not a hex digit/);
    expect(r2.code).not.toBe(0);
    expect(r2.stderr).toMatch(/pod ids 1..255/);
    expect(r3.code).not.toBe(0);
    expect(r3.stderr).toMatch(/unreachable/);
    expect(r4.code).not.toBe(0);
    expect(r4.stderr).toMatch(/port/);
  }, 120_000);
});

describe('the air verbs find the running "retrokube up" (issue 17 items 12, 13)', () => {
  it("air listen with no address hears the running up's air with its key and cluster from the state folder", async () => {
    const relay = await startRelay({ port: 0, bind: '127.0.0.1', rate: null });
    const dir = mkdtempSync(join(tmpdir(), 'rk-air-up-'));
    cleanup.push(
      () => relay.close(),
      () => rmSync(dir, { recursive: true, force: true }),
    );
    writeFileSync(join(dir, 'key'), `${KEY_HEX}\n`, { mode: 0o600 });
    // up.json as a running `up` writes it (this test process plays the up: its pid is alive)
    writeFileSync(
      join(dir, 'up.json'),
      JSON.stringify({
        pid: process.pid,
        control: 'http://127.0.0.1:1',
        air: { host: '127.0.0.1', port: relay.address.port, control: '', keyFile: join(dir, 'key') },
        cluster: 'kube',
        machines: [],
        startedAt: new Date().toISOString(),
      }),
    );
    const node = await openStation({ host: '127.0.0.1', port: relay.address.port, helloIntervalMs: 0 });
    cleanup.push(() => node.close());
    let nc = 5;
    const timer = setInterval(
      () => void node.send(heartbeatDatagram({ cluster: TAG, node: 'node-a', ids: [1], counter: nc++ }, KEY)),
      150,
    );
    cleanup.push(() => clearInterval(timer));
    const r = await cli(['air', 'listen', '--state', dir, '--json', '--duration', '3']);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.some((l) => l.kind === 'heartbeat' && l.verdict === 'ok' && l.auth === true)).toBe(true);
    // and an explicit address that is not the up's air gets a note pointing at it
    const other = await cli(['air', 'listen', '127.0.0.1:9', '--state', dir, '--duration', '1']);
    expect(other.stderr).toContain(
      `the running "retrokube up" has its air at 127.0.0.1:${relay.address.port}`,
    );
  }, 60_000);

  it('with no up and no address, listen refuses with a one-line way out', async () => {
    const r = await cli(['air', 'listen', '--state', mkdtempSync(join(tmpdir(), 'rk-air-none-'))]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(
      /no running "retrokube up" found in .*give the relay: \S*retrokube air listen HOST\[:PORT\] --key-file FILE$/m,
    );
  });

  it('a listener that hears nothing for a few seconds says so (on stderr, keeping stdout clean)', async () => {
    const quiet = await openStation({ host: '127.0.0.1', port: 9, helloIntervalMs: 0, hello: false });
    const port = quiet.local.port; // a bound UDP port where no relay answers
    cleanup.push(() => quiet.close());
    const r = await cli(['air', 'listen', `127.0.0.1:${port}`, '--json', '--duration', '7']);
    expect(r.stderr).toMatch(
      new RegExp(`heard nothing on the air at 127\\.0\\.0\\.1:${port} for 5 s: is a relay running there`),
    );
    expect(r.stdout.trim().split('\n')).toHaveLength(1); // only the final {"view": ...}
  }, 60_000);

  it('air state|off|loss|cut need the state folder or --control: no silent 127.0.0.1:7525', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rk-air-none-'));
    const rs = await Promise.all(
      [['state'], ['off'], ['loss', '0.1'], ['cut', 'node-a']].map((v) => cli(['air', ...v, '--state', dir])),
    );
    for (const r of rs) {
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/no running "retrokube up" found in .* and no --control given/);
    }
  }, 60_000);
});

describe('#28.11 the relay control endpoint beyond loopback', () => {
  const OPEN_RELAY = [
    'air',
    'relay',
    '--port',
    '0',
    '--control-port',
    '0',
    '--control-bind',
    '0.0.0.0',
    '--no-metrics',
  ];
  it('air relay --control-bind 0.0.0.0 is refused without --insecure-control, saying why and what to do', async () => {
    const r = await cli(OPEN_RELAY);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(
      /--control-bind 0\.0\.0\.0: the relay's control endpoint has no authentication.*--insecure-control/,
    );
  });

  it('with --insecure-control it serves, with a warning', async () => {
    const { out } = await start([...OPEN_RELAY, '--insecure-control'], /control on/);
    expect(out()).toMatch(/WARNING: the relay's control endpoint on 0\.0\.0\.0 has no authentication/);
  });
});

describe('#28.5 secrets off the command line', () => {
  it('air listen/inject take --key-file or RK_KEY, and warn about --key', async () => {
    const { airKey } = await import('./air.ts');
    const dir = mkdtempSync(join(tmpdir(), 'rk-key-'));
    try {
      writeFileSync(join(dir, 'k'), `${KEY_HEX}\n`, { mode: 0o600 });
      expect(Buffer.from(airKey({ keyFile: join(dir, 'k') }, {})!)).toEqual(Buffer.from(KEY));
      expect(Buffer.from(airKey({}, { RK_KEY: KEY_HEX })!)).toEqual(Buffer.from(KEY));
      const warned: string[] = [];
      airKey({ key: KEY }, {}, (l) => warned.push(l));
      expect(warned.join('')).toMatch(/--key on the command line is visible .* RK_KEY=… or --key-file/);
      expect(() => airKey({ key: KEY, keyFile: join(dir, 'k') }, {})).toThrow(/not both/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('bridge takes --*-token-file/--*-signing-key-file and warns about secrets on argv', async () => {
    const { bridgeSecrets } = await import('../sheets/bridge/cli.ts');
    const dir = mkdtempSync(join(tmpdir(), 'rk-bridge-'));
    try {
      writeFileSync(join(dir, 't'), 'peer-secret\n', { mode: 0o600 });
      const base = { local: 'http://a', peer: 'http://b', localToken: 'x', peerToken: 'y', output: 'text' };
      const warned: string[] = [];
      const o = bridgeSecrets(
        { ...base, peerTokenFile: join(dir, 't') },
        ['node', 'main', '--local-token', 'x'],
        (l) => warned.push(l),
      );
      expect(o.peerToken).toBe('peer-secret');
      expect(warned.join('')).toMatch(
        /--local-token on the command line is visible .* LOCAL_TOKEN=… or --local-token-file/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('skctl warns about --token and --key on argv (they still work, as the reference takes them)', async () => {
    // Nothing listens on port 9 of loopback: the verb fails after reading its flags, having warned.
    const r = await cli(['skctl', '-s', 'http://127.0.0.1:9', '--token', 'x', '--key', 'y', 'get', 'nodes']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(
      /warning: --token on the command line is visible .* TOKEN=… or --token-file FILE/,
    );
    expect(r.stderr).toMatch(
      /warning: --key on the command line is visible .* SIGNING_KEY=… or --key-file FILE/,
    );
    const quiet = await cli(['skctl', '-s', 'http://127.0.0.1:9', 'get', 'nodes']);
    expect(quiet.stderr).not.toMatch(/on the command line is visible/);
  }, 120_000);

  it('no help example shows a secret on the command line', async () => {
    for (const verb of [['air', 'listen'], ['air', 'inject'], ['skctl'], ['sheets', 'bridge', 'migrate']]) {
      const r = await cli([...verb, '--help']);
      const examples = r.stdout.slice(r.stdout.indexOf('Example'));
      expect(examples, verb.join(' ')).not.toMatch(
        /--key [0-9a-f]|--token [^-\s]|--(peer|local)-(token|signing-key) [^-\s]/,
      );
    }
  }, 120_000);
});
