// The node agent (our kubelet, spec §4 and §1.4). Every interval:
//   1. report this node's pods (phase, container id, ports, restarts, exit code, message),
//   2. heartbeat to the apiserver (signed when a key is set) and receive the desired pods,
//   3. converge: start missing Running pods (recreate on a changed spec_hash), stop Terminating ones
//      and any pod no longer ordered here.
// Fixing the reference's hazards:
//   - a FAILED heartbeat changes nothing: running pods keep running (the reference kubelet treats a
//     failed POST as "no pods" and removes every container);
//   - a pod that exits is restarted by the agent itself with exponential backoff (10 s, 20 s, … 5 min,
//     reset after 10 min of healthy running), even while the apiserver is unreachable — unless its
//     Deployment's restart_policy (OnFailure, Never) says it has finished: then it stays Succeeded
//     or Failed with its exit code (phases.ts);
//   - it reports Pending/Running (and, for a declared policy, CrashLoopBackOff/Succeeded/Failed), the
//     last exit code, restarts and a reason (the reference always says Running);
//   - images from the sheet are digest-verified before anything runs;
//   - a restarted agent adopts the containers it finds running (docker) instead of starting them
//     again; a pod that cannot start yet (no daemon, no image) waits Pending with the reason.
// What runs a pod and with what: pod-plan.ts; finished pods kept on disk: finished.ts; one pod's
// entry and the phase it reports: pod-entry.ts.

import os from 'node:os';
import path from 'node:path';
import { Counter, Gauge, Registry } from 'prom-client';
import { logger } from '../../util/log.ts';
import { SheetsClient } from '../ctl/client.ts';
import { isObjectName, nameProblem, pathInside } from '../names.ts';
import type { Order, RunOrder } from '../scheduler/orders.ts';
import { finalPhase, restartDue } from '../scheduler/phases.ts';
import { primaryIp, sourceAddressFor } from './address.ts';
import { FinishedPods, finishedDir } from './finished.ts';
import { type Entry, entryPhase, finishedMessage, newEntry, type PodStatus, policyOf } from './pod-entry.ts';
import { PodPlanner, portsText, type RuntimeName } from './pod-plan.ts';
import { DockerRuntime } from './runtimes/docker.ts';
import { PROCESS_OPT_IN, ProcessRuntime } from './runtimes/process.ts';
import { PodWait, type RunningPod, type Runtime } from './runtimes/types.ts';
import { WasmRuntime } from './runtimes/wasm.ts';
import { privateWorkDir } from './workdir.ts';

export const LIMITS = {
  intervalMs: 10_000, // reference INTERVAL (10 s); the apiserver's node TTL is 30 s
  backoffBaseMs: 10_000, // first restart delay after a crash (Kubernetes CrashLoopBackOff)
  backoffMaxMs: 300_000, // restart delay cap (Kubernetes: 5 min)
  backoffResetMs: 600_000, // a pod that ran this long without crashing starts its backoff over
  stopGraceMs: 10_000, // SIGTERM → SIGKILL for process pods
  imageRetryMs: 10_000, // a pod whose image cannot be fetched/verified is retried after this
  reportSoonMs: 250, // a pod that started, ended or waits is reported this soon, not at the next interval (#29.6)
} as const;

export type { AgentPhase, PodStatus } from './pod-entry.ts';
export type { RuntimeName } from './pod-plan.ts';
export { parseEnv, parsePorts, portsText } from './pod-plan.ts';

export interface AgentOptions {
  server: string;
  token: string;
  key?: string;
  name: string;
  ip?: string;
  cpuTotal?: number;
  memTotal?: number;
  intervalMs?: number;
  runtimes: RuntimeName[];
  /**
   * The `process` runtime runs `/bin/sh -c <command>` from a cell as this agent's user: it is
   * offered only when a person opted in by name (`sheets node --allow-process`).
   */
  allowProcess?: boolean;
  workDir?: string; // logs/ and secrets/ live here
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  stopGraceMs?: number;
  dockerNetwork?: string;
  publishAddr?: string;
  /** DOCKER_HOST of the docker runtime (default: this process's environment). */
  dockerHost?: string;
  // Tests and `sheets up` may supply runtimes (e.g. to use a docker runtime without probing).
  runtimeImpls?: Partial<Record<RuntimeName, Runtime>>;
}

export class NodeAgent {
  readonly opts: AgentOptions;
  readonly registry = new Registry();
  private readonly log;
  private readonly client: SheetsClient;
  private readonly entries = new Map<string, Entry>();
  private readonly runtimes = new Map<RuntimeName, Runtime>();
  private readonly planner: PodPlanner;
  private readonly finished: FinishedPods;
  /** Runtimes whose surviving pods were taken over (asked before the first heartbeat). */
  private readonly adopted = new Set<RuntimeName>();
  private loop: NodeJS.Timeout | undefined;
  private running = false;
  private ticking: Promise<void> | undefined;
  private readonly workDir: string;
  lastHeartbeatOk = false;
  heartbeats = 0;
  /** Heartbeats the apiserver refused or never answered. */
  failedHeartbeats = 0;
  private readonly mHeartbeats: Counter<'result'>;
  private readonly mRestarts: Counter;
  private readonly mPods: Gauge<'phase'>;

  constructor(opts: AgentOptions) {
    this.opts = opts;
    this.log = logger('sheets-node', { node: opts.name });
    const interval = opts.intervalMs ?? LIMITS.intervalMs;
    this.client = new SheetsClient({
      url: opts.server,
      token: opts.token,
      key: opts.key,
      timeoutMs: Math.min(30_000, Math.max(2_000, interval)),
    });
    if (opts.runtimes.includes('process') && !opts.allowProcess) throw new Error(PROCESS_OPT_IN);
    this.workDir = privateWorkDir(opts.workDir, opts.name, (l) => this.log.warn(l));
    this.finished = new FinishedPods(finishedDir(this.workDir), this.log);
    for (const r of opts.runtimes) this.runtimes.set(r, opts.runtimeImpls?.[r] ?? this.makeRuntime(r));
    this.planner = new PodPlanner({
      client: this.client,
      runtimes: this.runtimes,
      node: opts.name,
      workDir: this.workDir,
      log: this.log,
      logFile: (pod) => this.logFile(pod),
    });
    this.mHeartbeats = new Counter({
      name: 'sk_node_heartbeats_total',
      help: 'heartbeats sent, by result',
      labelNames: ['result'],
      registers: [this.registry],
    });
    this.mRestarts = new Counter({
      name: 'sk_node_pod_restarts_total',
      help: 'pod restarts after a crash',
      registers: [this.registry],
    });
    this.mPods = new Gauge({
      name: 'sk_node_pods',
      help: 'pods on this node, by phase',
      labelNames: ['phase'],
      registers: [this.registry],
    });
  }

  // The docker runtime is always made when asked for: whether a daemon answers is asked per start,
  // so a daemon that comes up later is used, and one that is away is a reason on the pod.
  private makeRuntime(r: RuntimeName): Runtime {
    if (r === 'wasm') return new WasmRuntime();
    if (r === 'process') return new ProcessRuntime();
    return new DockerRuntime({
      network: this.opts.dockerNetwork ?? 'sheeternetes',
      publishAddr: this.opts.publishAddr,
      host: this.opts.dockerHost,
    });
  }

  enabledRuntimes(): RuntimeName[] {
    return [...this.runtimes.keys()];
  }

  /** The pod's log file; throws for a name that is not an object name or would leave the work folder. */
  logFile(pod: string): string {
    if (!isObjectName(pod)) throw new Error(`pod ${nameProblem(pod)}`);
    return pathInside(path.join(this.workDir, 'logs'), `${pod}.log`);
  }

  private recallDone(e: Entry): boolean {
    const d = this.finished.read(e.name, e.order.spec_hash);
    if (!d || restartDue(policyOf(e.order), d.exit_code)) return false;
    e.done = d.phase;
    e.exitCode = d.exit_code;
    e.lastId = d.id;
    e.message = d.message ?? finishedMessage(d.exit_code);
    return true;
  }

  private rememberDone(e: Entry): void {
    if (!e.done || e.exitCode === null) return;
    this.finished.write(e.name, {
      spec_hash: e.order.spec_hash,
      phase: e.done,
      exit_code: e.exitCode,
      id: e.lastId,
      message: e.message,
    });
  }

  private forgetDone(pod: string): void {
    this.finished.forget(pod);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.log.info(
      { server: this.opts.server, runtimes: this.enabledRuntimes(), signed: Boolean(this.opts.key) },
      `node ${this.opts.name} starting`,
    );
    if (this.runtimes.has('wasm'))
      this.log.info(
        'wasm pods run on node:wasi, which Node 24 still calls experimental (said once here, not per pod)',
      );
    // A docker runtime without a daemon is said at once, in one line (pods then carry the reason).
    const docker = this.runtimes.get('docker');
    if (docker instanceof DockerRuntime)
      void docker.problem().then((p) => {
        if (p && this.nodeReason !== p) this.log.warn(`pods cannot start: ${p}`);
        if (p) this.nodeReason = p;
      });
    void this.round();
  }

  // One round, then the next after the interval — or sooner when a pod changed meanwhile.
  private inTick = false;
  private changed = false;
  private readonly round = async (): Promise<void> => {
    if (!this.running) return;
    this.loop = undefined;
    this.inTick = true;
    this.changed = false;
    this.ticking = this.tick();
    await this.ticking;
    this.inTick = false;
    if (!this.running) return;
    const interval = this.opts.intervalMs ?? LIMITS.intervalMs;
    const next = this.changed ? Math.min(LIMITS.reportSoonMs, interval) : interval;
    this.loopAt = Date.now() + next;
    this.loop = setTimeout(() => void this.round(), next);
  };
  private loopAt = 0;

  /**
   * A pod started, ended or waits for a new reason: report it at once rather than at the next
   * interval (10 s), so the Pods row says what the node knows within a second. Extra heartbeats
   * are the same idempotent request; several changes close together share one.
   */
  private reportSoon(): void {
    if (!this.running) return;
    this.changed = true;
    if (this.inTick || !this.loop) return; // the round running now schedules the next one soon
    if (this.loopAt <= Date.now() + LIMITS.reportSoonMs) return; // the next round is soon anyway
    clearTimeout(this.loop);
    this.loopAt = Date.now() + LIMITS.reportSoonMs;
    this.loop = setTimeout(() => void this.round(), LIMITS.reportSoonMs);
  }

  // Stop the loop; stop every pod unless told to leave them running.
  async stop(stopPods = true): Promise<void> {
    this.running = false;
    if (this.loop) clearTimeout(this.loop);
    await this.ticking?.catch(() => {});
    // Stopping the agent is not the pod going away: finished pods stay remembered.
    if (stopPods) await Promise.all([...this.entries.values()].map((e) => this.remove(e, false)));
  }

  status(): PodStatus[] {
    return [...this.entries.values()].map((e) => ({
      name: e.name,
      phase: entryPhase(e),
      container_id: e.run?.id ?? (e.done ? e.lastId : null),
      ports: e.run?.ports ?? portsText(e.order.ports),
      restarts: e.restarts,
      exit_code: e.exitCode,
      message: e.message,
      spec_hash: e.order.spec_hash,
    }));
  }

  // --ip when given; else the address this host really uses to reach the apiserver (asked once).
  private ip: string | undefined;
  private async address(): Promise<string> {
    this.ip ??= this.opts.ip ?? (await sourceAddressFor(this.opts.server)) ?? primaryIp();
    return this.ip;
  }

  // One observe → heartbeat → converge round.
  async tick(): Promise<void> {
    await this.adoptSurvivors();
    const pods = this.status();
    for (const phase of ['Pending', 'Running', 'CrashLoopBackOff', 'Succeeded', 'Failed'] as const)
      this.mPods.set({ phase }, pods.filter((p) => p.phase === phase).length);
    let reply: unknown;
    try {
      reply = await this.client.post({
        node: this.opts.name,
        ip: await this.address(),
        cpu_total: this.opts.cpuTotal ?? os.availableParallelism() * 1000,
        mem_total: this.opts.memTotal ?? Math.floor(os.totalmem() / 1024 / 1024),
        pods,
      });
    } catch (e) {
      // The reference stops every pod here. We keep them: the apiserver being away says nothing
      // about whether they should run.
      this.lastHeartbeatOk = false;
      this.failedHeartbeats++;
      this.mHeartbeats.inc({ result: 'failed' });
      this.log.warn({ err: String(e) }, 'heartbeat failed; pods keep running');
      return;
    }
    this.heartbeats++;
    this.lastHeartbeatOk = true;
    this.mHeartbeats.inc({ result: 'ok' });
    const orders = (reply as { pods?: unknown }).pods;
    if (!Array.isArray(orders)) {
      this.log.warn(
        { reply: JSON.stringify(reply).slice(0, 200) },
        'heartbeat reply without a pods list; nothing changed',
      );
      return;
    }
    await this.converge(orders as Order[]);
  }

  /**
   * Pods that outlived an earlier agent on this node (docker containers keep running) become
   * entries before the first heartbeat, so they are reported Running and kept when their spec is
   * still ordered — not started a second time. Asked until the runtime answers once.
   */
  private async adoptSurvivors(): Promise<void> {
    for (const [name, runtime] of this.runtimes) {
      if (this.adopted.has(name) || !runtime.running) continue;
      let found: Awaited<ReturnType<NonNullable<Runtime['running']>>>;
      try {
        found = await runtime.running(this.opts.name);
      } catch (err) {
        this.log.debug({ runtime: name, err: String(err) }, 'cannot list surviving pods yet');
        continue;
      }
      this.adopted.add(name);
      for (const f of found) {
        if (!isObjectName(f.pod) || this.entries.has(f.pod)) {
          // A second container for one pod (or a name that is no pod): the entry's own copy wins.
          await f.run.stop(0);
          continue;
        }
        const e = newEntry({
          name: f.pod,
          desired: 'Running',
          image: '',
          command: '',
          cpu_req: 0,
          mem_req: 0,
          deployment: f.deployment,
          env: '',
          secret_files: '',
          ports: '',
          spec_hash: f.specHash,
        });
        e.run = f.run;
        e.lastId = f.run.id;
        e.runtime = name;
        e.startedAt = Date.now();
        this.entries.set(f.pod, e);
        this.log.info({ pod: f.pod, id: f.run.id, runtime: name }, 'adopted a running pod');
        void f.run.exited.then((x) => this.onExit(e, f.run, x.code, x.message));
      }
    }
  }

  private async converge(orders: Order[]): Promise<void> {
    const wanted = new Set<string>();
    const work: Promise<void>[] = [];
    for (const o of orders) {
      if (!o || typeof o.name !== 'string') continue;
      // A pod name becomes a file name here; an apiserver (or a cell) that sends "../x" is ignored.
      if (!isObjectName(o.name)) {
        this.log.warn({ pod: String(o.name).slice(0, 64) }, `order ignored: pod ${nameProblem(o.name)}`);
        continue;
      }
      const e = this.entries.get(o.name);
      if (o.desired === 'Terminating') {
        if (e) work.push(this.remove(e));
        continue;
      }
      if (o.desired !== 'Running') continue;
      wanted.add(o.name);
      if (e && o.spec_hash && e.order.spec_hash && o.spec_hash !== e.order.spec_hash) {
        this.log.info({ pod: o.name }, 'spec changed; recreating');
        work.push(this.remove(e).then(() => this.add(o)));
      } else if (!e) {
        this.add(o);
      } else {
        this.reorder(e, o);
      }
    }
    // Garbage: pods here that the apiserver no longer orders here (only after a good heartbeat).
    for (const e of this.entries.values()) if (!wanted.has(e.name)) work.push(this.remove(e));
    await Promise.all(work);
  }

  // Same pod, same spec: only the restart policy may have changed what its last exit means.
  private reorder(e: Entry, o: RunOrder): void {
    const was = policyOf(e.order);
    e.order = o;
    const now = policyOf(o);
    if (was === now || e.run || e.exitCode === null) return;
    const due = restartDue(now, e.exitCode);
    if (e.done && due) {
      e.done = undefined;
      this.forgetDone(e.name);
      this.log.info(
        { pod: e.name, policy: now || 'unset' },
        'restart policy changed; starting the pod again',
      );
      e.backingOff = true;
      this.backoff(e);
    } else if (e.backingOff && !due) {
      if (e.timer) clearTimeout(e.timer);
      e.timer = undefined;
      e.backingOff = false;
      e.done = finalPhase(e.exitCode);
      e.message = finishedMessage(e.exitCode);
      this.rememberDone(e);
    }
  }

  private add(order: RunOrder): void {
    const e = newEntry(order);
    this.entries.set(order.name, e);
    if (this.recallDone(e))
      this.log.info({ pod: e.name, phase: e.done }, 'finished before this agent started; not run again');
    else this.schedule(e, 0);
  }

  private schedule(e: Entry, delay: number): void {
    if (e.timer) clearTimeout(e.timer);
    e.timer = setTimeout(() => {
      e.timer = undefined;
      void this.launch(e);
    }, delay);
  }

  private async remove(e: Entry, forget = true): Promise<void> {
    if (forget) this.forgetDone(e.name);
    if (this.entries.get(e.name) === e) this.entries.delete(e.name);
    e.stopping = true;
    if (e.timer) clearTimeout(e.timer);
    const run = e.run;
    if (run) {
      this.log.info({ pod: e.name }, 'stopping pod');
      await run.stop(this.opts.stopGraceMs ?? LIMITS.stopGraceMs);
    }
  }

  private async launch(e: Entry): Promise<void> {
    if (e.stopping || e.run || e.launching) return;
    e.launching = true;
    try {
      const plan = await this.planner.plan(e.order);
      if ('wait' in plan) {
        this.waiting(e, plan.wait);
        if (!e.stopping) this.schedule(e, LIMITS.imageRetryMs);
        return;
      }
      if (e.stopping) return;
      const run = await plan.runtime.start(plan.spec);
      if (e.stopping) {
        await run.stop(this.opts.stopGraceMs ?? LIMITS.stopGraceMs);
        return;
      }
      e.run = run;
      e.lastId = run.id;
      e.runtime = plan.runtime.name;
      e.startedAt = Date.now();
      e.backingOff = false;
      e.message = null;
      this.nodeReason = undefined;
      this.log.info({ pod: e.name, image: e.order.image, runtime: plan.runtime.name, id: run.id }, 'run pod');
      this.reportSoon();
      void run.exited.then((x) => this.onExit(e, run, x.code, x.message));
    } catch (err) {
      if (err instanceof PodWait) {
        // Not the pod's fault (no daemon, no image): Pending with the reason, tried again after a
        // back-off, not counted as a restart.
        const delay = this.backoff(e);
        this.waiting(
          e,
          `${err.message}; retrying in ${Math.round(delay / 1000)}s`,
          err.message,
          err.nodeWide,
        );
        return;
      }
      e.message = `failed to start: ${err instanceof Error ? err.message : String(err)}`;
      e.exitCode = null;
      this.log.warn({ pod: e.name, err: e.message }, 'FAILED to start');
      this.backoff(e);
    } finally {
      e.launching = false;
    }
  }

  // A pod that cannot start yet: the reason goes on its row; the log says it once per reason.
  // A reason of the whole node (no daemon) is said once for all its pods until a pod starts.
  private waiting(e: Entry, message: string, reason: string = message, nodeWide = false): void {
    const before = e.message;
    e.message = message;
    if (before !== message) this.reportSoon();
    if (nodeWide) {
      if (this.nodeReason !== reason) this.log.warn(`pods cannot start: ${reason}`);
      this.nodeReason = reason;
      return;
    }
    if (before?.startsWith(reason)) return;
    this.log.warn({ pod: e.name }, `pod cannot start yet: ${reason}`);
  }
  private nodeReason: string | undefined;

  private onExit(e: Entry, run: RunningPod, code: number, message?: string): void {
    if (e.run !== run) return;
    e.run = undefined;
    if (e.stopping) return;
    e.exitCode = code;
    this.reportSoon();
    const policy = policyOf(e.order);
    if (!restartDue(policy, code)) {
      e.done = finalPhase(code);
      e.message =
        code === 0 ? finishedMessage(code) : `${message ?? finishedMessage(code)}; not restarted (${policy})`;
      this.rememberDone(e);
      this.log.info({ pod: e.name, code, policy }, `pod finished: ${e.done}`);
      return;
    }
    e.backingOff = true;
    e.restarts++;
    this.mRestarts.inc();
    if (Date.now() - e.startedAt >= LIMITS.backoffResetMs) e.backoffStep = 0;
    const delay = this.backoff(e);
    e.message = `${message ?? `exited with code ${code}`}; restarting in ${Math.round(delay / 1000)}s`;
    if (policy !== '') e.message = `back-off: ${e.message}`;
    this.log.info(
      { pod: e.name, code, restarts: e.restarts, delayMs: delay },
      'pod exited; restarting after backoff',
    );
  }

  private backoff(e: Entry): number {
    const base = this.opts.backoffBaseMs ?? LIMITS.backoffBaseMs;
    const max = this.opts.backoffMaxMs ?? LIMITS.backoffMaxMs;
    const delay = Math.min(max, base * 2 ** e.backoffStep);
    e.backoffStep++;
    if (!e.stopping) this.schedule(e, delay);
    return delay;
  }
}
