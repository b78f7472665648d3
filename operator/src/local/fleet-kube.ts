// One Oberon cluster of a fleet run by `retrokube up`, as a rollout target: a LocalCluster in its own
// state sub-folder, observed from what its passive listener hears on its air (never by asking the
// plane), and changed through the plane's live channel — the same live-commands file mechanism as
// `retrokube machine run --live-commands` in a machine pod: the file holds the desired deployments
// as `Kube.Apply` lines, and each new or changed line reaches the running plane's serial port.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseLiveCommands, watchLiveCommands } from '../machine/live-commands.ts';
import type { Change, Observation, Version } from '../rollout/plan.ts';
import { logger } from '../util/log.ts';
import type { LocalCluster } from './cluster.ts';
import {
  desiredAfterRestart,
  liveCommandsText,
  observeLocalKube,
  withLocalVersion,
} from './rollout-observe.ts';
import type { FleetTarget } from './rollout-runner.ts';
import type { Deployment } from './spec.ts';

const log = logger('local-fleet');

export const LIMITS = {
  liveFile: 'live-commands', // in the cluster's sub-folder: the plane's desired deployments
} as const;

export class FleetKube implements FleetTarget {
  readonly kind = 'OberonKube' as const;
  readonly name: string;
  readonly labels: Record<string, string>;
  private desired: Deployment[];
  private readonly liveFile: string;
  private live: { stop(): void; poll(): Promise<void> } | null = null;

  readonly cluster: LocalCluster;

  constructor(cluster: LocalCluster, dir: string) {
    this.cluster = cluster;
    this.name = cluster.spec.name;
    this.labels = { ...(cluster.spec.labels ?? {}) };
    this.liveFile = join(dir, LIMITS.liveFile);
    const lines = existsSync(this.liveFile)
      ? parseLiveCommands(readFileSync(this.liveFile, 'latin1')).lines
      : [];
    this.desired = desiredAfterRestart(cluster.spec.deployments, lines);
    this.writeLive();
  }

  /** What the plane is told now. */
  deployments(): Deployment[] {
    return this.desired.map((d) => ({ ...d }));
  }

  /** Starts sending the live file to the plane (once the plane runs: its boot has ensured the FILE's deployments). */
  startLive(): void {
    this.live ??= watchLiveCommands({
      path: this.liveFile,
      feed: (text) => this.cluster.serial('plane', text),
      warn: (message) => log.warn({ cluster: this.name }, `live commands: ${message}`),
    });
  }

  observe(change: Change, minRunning: number): Observation {
    return observeLocalKube(
      this.cluster.view(),
      this.desired,
      this.cluster.spec.nodeNames,
      change.deployment,
      minRunning,
    );
  }

  apply(deployment: string, version: Version): void {
    const next = withLocalVersion(this.desired, deployment, version);
    if (liveCommandsText(next) === liveCommandsText(this.desired)) return;
    this.desired = next;
    this.writeLive();
    log.info({ cluster: this.name, deployments: liveCommandsText(next).trim() }, 'live deployments written');
    void this.live?.poll(); // now rather than at the next poll
  }

  private writeLive(): void {
    const text = liveCommandsText(this.desired);
    if (existsSync(this.liveFile) && readFileSync(this.liveFile, 'latin1') === text) return;
    // Whole or not at all: the watcher must never read half a file.
    writeFileSync(`${this.liveFile}.tmp`, text);
    renameSync(`${this.liveFile}.tmp`, this.liveFile);
  }

  async close(): Promise<void> {
    this.live?.stop();
    await this.cluster.close();
  }
}
