// `retrokube up FILE` with a fleet FILE (several OberonKubes and/or Rollouts): each OberonKube runs
// as its own local cluster (air relay, listener, plane and nodes as emulated machines) in a
// sub-folder of the state folder, and each Rollout is walked across them by the planner the
// Rollout controller uses. The control endpoint (fleet-control.ts) serves the clusters and the
// rollouts to the companion verbs (`retrokube rollout status|promote|abort|pause|resume`, `kube
// get --cluster`, `machine off CLUSTER/NODE`).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { buildKubeDisk } from '../machine/kube-disk.ts';
import { formatRollout } from '../rollout/format.ts';
import { cliName } from '../util/cli-name.ts';
import { sendLogsTo } from '../util/log.ts';
import { stopOnSignal } from '../util/process.ts';
import { LocalCluster } from './cluster.ts';
import { startFleetControl } from './fleet-control.ts';
import { FleetKube } from './fleet-kube.ts';
import { FleetSheet } from './fleet-sheet.ts';
import { parseFleetFile } from './fleet-spec.ts';
import { LocalRollouts, LIMITS as RUNNER_LIMITS } from './rollout-runner.ts';
import { startLocalSheets } from './sheets.ts';
import {
  readUpState,
  removeUpState,
  LIMITS as STATE_LIMITS,
  stateKey,
  type UpState,
  upVncPassword,
  writeUpState,
} from './state.ts';
import type { UpOptions } from './up-options.ts';

export const LIMITS = {
  redrawMs: 1000, // the live view is redrawn this often
  summaryMs: 10_000, // without a terminal, one summary line this often
} as const;

/** Where a fleet cluster keeps its disks, key and live file. */
export const clusterDir = (dir: string, name: string): string => join(dir, 'clusters', name);

export async function runFleetUp(o: UpOptions, text: string): Promise<void> {
  const out = o.out ?? ((s: string) => void process.stdout.write(s.endsWith('\n') ? s : `${s}\n`));
  const fleet = parseFleetFile(text, o.file);
  if (o.qemu && o.qemu.machines.length > 0)
    throw new Error('--qemu runs machines of one cluster; a fleet FILE runs every machine emulated');
  const running = readUpState(o.dir);
  if (running)
    throw new Error(
      `a cluster is already up in ${o.dir} (pid ${running.pid}); stop it with "${cliName()} down"`,
    );
  mkdirSync(o.dir, { recursive: true });
  if (o.logFormat === 'json') sendLogsTo('stderr');
  else {
    sendLogsTo(join(o.dir, STATE_LIMITS.logFile));
    out(
      `logs (JSON lines) go to ${join(o.dir, STATE_LIMITS.logFile)}; --log-format json sends them to stderr`,
    );
  }
  const t0 = Date.now();
  const disk = fleet.kubes.length > 0 ? await buildKubeDisk() : null;
  if (disk)
    out(`Kube disk ${disk.cached ? 'cached' : 'built'} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  const { stopped, stop, release } = stopOnSignal();

  const kubes: FleetKube[] = [];
  const sheets: FleetSheet[] = [];
  let vnc = o.vncBase;
  const vncPassword = vnc !== null ? upVncPassword(o.dir) : null; // #28.2: every screen needs it
  for (const spec of fleet.kubes) {
    if (!disk) break;
    const dir = clusterDir(o.dir, spec.name);
    const cluster = await LocalCluster.start(
      {
        spec,
        key: spec.key ?? stateKey(dir),
        kubeDisk: disk.path,
        kubeDiskKey: disk.key,
        dir,
        vncBase: vnc,
        vncPassword: vncPassword?.password,
        progress: (line) => out(`${spec.name}: ${line}`),
      },
      false,
    );
    kubes.push(new FleetKube(cluster, dir));
    if (vnc) vnc += spec.nodes + 1; // the next cluster's machines after this one's
  }
  try {
    for (const f of fleet.sheets) {
      const name = f.sheets.cluster.metadata.name as string;
      const running = await startLocalSheets(f.sheets, {
        dir: clusterDir(o.dir, name),
        seed: stateKey(o.dir),
        out: (line) => out(line),
      });
      sheets.push(new FleetSheet(name, f.labels, running));
    }
  } catch (e) {
    await Promise.all([...sheets.map((x) => x.close()), ...kubes.map((k) => k.close())]);
    release();
    throw e;
  }
  const rollouts = new LocalRollouts({
    dir: o.dir,
    rollouts: fleet.rollouts,
    targets: [...kubes, ...sheets],
    say: (line) => out(line),
  });
  const first = kubes[0]?.cluster;
  const state = (): UpState => ({
    pid: process.pid,
    control: control.url,
    // The air verbs and `kube get` without --cluster act on the first Oberon cluster (none: no air).
    air: first
      ? {
          host: '127.0.0.1',
          port: first.relay.address.port,
          control: first.airControl,
          keyFile: join(clusterDir(o.dir, first.spec.name), STATE_LIMITS.keyFile),
        }
      : { port: 0, control: '' },
    cluster: first?.spec.cluster ?? '',
    machines: kubes.flatMap((k) =>
      k.cluster.machines().map(({ name, role, vnc: v, disk: d, on }) => ({
        name: `${k.name}/${name}`,
        role,
        vnc: v,
        disk: d,
        on,
      })),
    ),
    ...(sheets[0] ? { sheets: { url: sheets[0].sheets.url } } : {}),
    fleet: {
      clusters: [
        ...kubes.map((k) => ({
          name: k.name,
          kind: k.kind,
          air: { port: k.cluster.relay.address.port, control: k.cluster.airControl },
        })),
        ...sheets.map((x) => ({ name: x.name, kind: x.kind, url: x.sheets.url })),
      ],
      rollouts: rollouts.names(),
    },
    vncPasswordFile: vncPassword?.file,
    startedAt: new Date(t0).toISOString(),
  });
  const control = await startFleetControl({ kubes, sheets, rollouts, down: () => stop(), state });
  writeUpState(o.dir, state());
  out(`up control ${control.url} (state in ${join(o.dir, 'up.json')})`);
  out(
    `${kubes.length + sheets.length} clusters: ${[
      ...kubes.map(
        (k) =>
          `${k.name} (${k.cluster.spec.nodes} node${k.cluster.spec.nodes > 1 ? 's' : ''}, air udp/${k.cluster.relay.address.port})`,
      ),
      ...sheets.map((x) => `${x.name} (SheetCluster, ${x.sheets.url})`),
    ].join(', ')}`,
  );
  if (fleet.rollouts.length > 0)
    out(`rollouts: ${rollouts.names().join(', ')} (retrokube rollout status NAME --watch)`);

  const tty = o.view && process.stdout.isTTY === true;
  let lastSummary = 0;
  const draw = (): void => {
    if (tty) {
      const clusters = kubes.map((k) => {
        const v = k.cluster.view();
        const labels = Object.entries(k.labels)
          .map(([l, x]) => `${l}=${x}`)
          .join(',');
        return `${k.name.padEnd(12)} nodes ${v.readyNodes}/${k.cluster.spec.nodes} Ready  pods ${v.running}  ${v.converged ? 'converged ' : 'converging'}  ${k
          .deployments()
          .map((d) => `${d.name} ${d.replicas} ${d.module}`)
          .join('; ')}  ${labels}`;
      });
      const walks = rollouts.names().map((n) => formatRollout(rollouts.view(n)!, Date.now()));
      process.stdout.write(
        `\x1b[H\x1b[2JKube on Oberon fleet · ${kubes.length} clusters · up ${Math.round((Date.now() - t0) / 1000)} s\n\n${clusters.join('\n')}\n\n${walks.join('\n\n')}\n\nCtrl-C stops everything · retrokube rollout promote NAME · retrokube kube get --cluster NAME\n`,
      );
    } else if (Date.now() - lastSummary >= LIMITS.summaryMs) {
      lastSummary = Date.now();
      out(
        kubes
          .map((k) => {
            const v = k.cluster.view();
            return `${k.name}: ${v.readyNodes}/${k.cluster.spec.nodes} Ready, ${v.running} pods, ${v.converged ? 'converged' : 'converging'}`;
          })
          .join(' · '),
      );
    }
  };
  const timer = setInterval(draw, LIMITS.redrawMs);
  // Each cluster starts on its own; its plane gets the live file once it runs (as a machine pod's
  // emulator starts the watcher after boot). Rollouts step from the start: one whose targets are
  // not heard yet waits for them (rollout-runner.ts).
  const starts = kubes.map((k) =>
    k.cluster.startAll().then(() => {
      k.startLive();
      out(`${k.name}: started`);
    }),
  );
  const stepper = setInterval(() => {
    rollouts.tick().catch((e: Error) => out(`rollouts: ${e.message}`));
  }, RUNNER_LIMITS.pollMs);
  try {
    await Promise.race([Promise.all(starts), stopped]);
    await stopped;
  } finally {
    clearInterval(timer);
    clearInterval(stepper);
    release();
    out('stopping the clusters ...');
    await control.close();
    await Promise.all([...kubes.map((k) => k.close()), ...sheets.map((x) => x.close())]);
    removeUpState(o.dir);
    out(`stopped; disks and rollout status kept in ${o.dir}`);
  }
}
