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
//   - images from the sheet are digest-verified before anything runs.

import { closeSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Counter, Gauge, Registry } from 'prom-client';
import { logger } from '../../util/log.ts';
import { SheetsClient } from '../ctl/client.ts';
import { ImageError, pullImage } from '../images/sicf.ts';
import { isObjectName, nameProblem, pathInside } from '../names.ts';
import type { Order, RunOrder } from '../scheduler/orders.ts';
import {
  backoffPhase,
  finalPhase,
  parseRestartPolicy,
  type RestartPolicy,
  restartDue,
} from '../scheduler/phases.ts';
import { primaryIp, sourceAddressFor } from './address.ts';
import { DockerRuntime, dockerAvailable } from './runtimes/docker.ts';
import { PROCESS_OPT_IN, ProcessRuntime } from './runtimes/process.ts';
import type { PodSpec, RunningPod, Runtime } from './runtimes/types.ts';
import { WasmRuntime } from './runtimes/wasm.ts';
import { openFresh, privateWorkDir } from './workdir.ts';

export const LIMITS = {
  intervalMs: 10_000, // reference INTERVAL (10 s); the apiserver's node TTL is 30 s
  backoffBaseMs: 10_000, // first restart delay after a crash (Kubernetes CrashLoopBackOff)
  backoffMaxMs: 300_000, // restart delay cap (Kubernetes: 5 min)
  backoffResetMs: 600_000, // a pod that ran this long without crashing starts its backoff over
  stopGraceMs: 10_000, // SIGTERM → SIGKILL for process pods
  imageRetryMs: 10_000, // a pod whose image cannot be fetched/verified is retried after this
  imageCacheEntries: 32, // verified modules kept in memory by layer digest
} as const;

export type RuntimeName = 'wasm' | 'process' | 'docker';

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
  // Tests and `sheets up` may supply runtimes (e.g. to use a docker runtime without probing).
  runtimeImpls?: Partial<Record<RuntimeName, Runtime>>;
}

export type AgentPhase = 'Pending' | 'Running' | 'CrashLoopBackOff' | 'Succeeded' | 'Failed';

export interface PodStatus {
  name: string;
  phase: AgentPhase;
  container_id: string | null;
  ports: string;
  restarts: number;
  exit_code: number | null;
  message: string | null;
  /** The spec_hash of the order this pod runs (a trailing Pods column: which spec is running). */
  spec_hash: string;
}

interface Entry {
  name: string;
  order: RunOrder;
  run: RunningPod | undefined;
  launching: boolean;
  stopping: boolean;
  restarts: number;
  exitCode: number | null;
  message: string | null;
  backoffStep: number;
  startedAt: number;
  timer: NodeJS.Timeout | undefined;
  runtime: RuntimeName | undefined;
  /** The pod exited and its policy starts it again after the back-off now running. */
  backingOff: boolean;
  /** The pod finished and its policy does not start it again. */
  done: 'Succeeded' | 'Failed' | undefined;
  /** The id of the last run, still shown for a finished pod (which run it was). */
  lastId: string | null;
}

/** What a node reports for one of its pods. */
export function entryPhase(e: Pick<Entry, 'run' | 'done' | 'backingOff' | 'order'>): AgentPhase {
  if (e.run) return 'Running';
  if (e.done) return e.done;
  if (e.backingOff) return backoffPhase(policyOf(e.order));
  return 'Pending';
}

const policyOf = (o: RunOrder): RestartPolicy => parseRestartPolicy(o.restart_policy);

export class NodeAgent {
  readonly opts: AgentOptions;
  readonly registry = new Registry();
  private readonly log;
  private readonly client: SheetsClient;
  private readonly entries = new Map<string, Entry>();
  private readonly runtimes = new Map<RuntimeName, Runtime>();
  private readonly modules = new Map<string, Uint8Array>(); // layer digest → verified bytes
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
    for (const r of opts.runtimes) {
      const impl = opts.runtimeImpls?.[r] ?? this.makeRuntime(r);
      if (impl) this.runtimes.set(r, impl);
    }
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

  private makeRuntime(r: RuntimeName): Runtime | undefined {
    if (r === 'wasm') return new WasmRuntime();
    if (r === 'process') return new ProcessRuntime();
    if (!dockerAvailable()) {
      this.log.warn('docker runtime requested but no Docker engine answers; docker images stay Pending');
      return undefined;
    }
    return new DockerRuntime({
      network: this.opts.dockerNetwork ?? 'sheeternetes',
      publishAddr: this.opts.publishAddr,
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

  /**
   * Where a finished pod's outcome is kept (by spec_hash), so a restarted agent reports it
   * Succeeded/Failed instead of running it again — the apiserver orders every placed pod Running.
   */
  private doneFile(pod: string): string {
    if (!isObjectName(pod)) throw new Error(`pod ${nameProblem(pod)}`);
    return pathInside(path.join(this.workDir, 'done'), `${pod}.json`);
  }

  private recallDone(e: Entry): boolean {
    try {
      const d = JSON.parse(readFileSync(this.doneFile(e.name), 'utf8')) as {
        spec_hash?: string;
        phase?: string;
        exit_code?: number;
        id?: string | null;
        message?: string | null;
      };
      if (d.spec_hash !== e.order.spec_hash || (d.phase !== 'Succeeded' && d.phase !== 'Failed'))
        return false;
      if (typeof d.exit_code !== 'number' || restartDue(policyOf(e.order), d.exit_code)) return false;
      e.done = d.phase;
      e.exitCode = d.exit_code;
      e.lastId = d.id ?? null;
      e.message = d.message ?? finishedMessage(d.exit_code);
      return true;
    } catch {
      return false; // none kept (or unreadable): the pod runs
    }
  }

  private rememberDone(e: Entry): void {
    try {
      writeFileSync(
        this.doneFile(e.name),
        JSON.stringify({
          spec_hash: e.order.spec_hash,
          phase: e.done,
          exit_code: e.exitCode,
          id: e.lastId,
          message: e.message,
        }),
      );
    } catch (err) {
      this.log.warn(
        { pod: e.name, err: String(err) },
        'cannot keep the finished state; a restarted agent runs the pod again',
      );
    }
  }

  private forgetDone(pod: string): void {
    try {
      rmSync(this.doneFile(pod), { force: true });
    } catch {
      // a name that cannot have a file has none to forget
    }
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
    const loop = async () => {
      if (!this.running) return;
      this.ticking = this.tick();
      await this.ticking;
      if (this.running) this.loop = setTimeout(() => void loop(), this.opts.intervalMs ?? LIMITS.intervalMs);
    };
    void loop();
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
      ports: portsText(e.order.ports),
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
    const e: Entry = {
      name: order.name,
      order,
      run: undefined,
      launching: false,
      stopping: false,
      restarts: 0,
      exitCode: null,
      message: null,
      backoffStep: 0,
      startedAt: 0,
      timer: undefined,
      runtime: undefined,
      backingOff: false,
      done: undefined,
      lastId: null,
    };
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
      const plan = await this.plan(e.order);
      if ('wait' in plan) {
        e.message = plan.wait;
        this.log.warn({ pod: e.name, reason: plan.wait }, 'pod cannot start yet');
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
      this.log.info({ pod: e.name, image: e.order.image, runtime: plan.runtime.name, id: run.id }, 'run pod');
      void run.exited.then((x) => this.onExit(e, run, x.code, x.message));
    } catch (err) {
      e.message = `failed to start: ${err instanceof Error ? err.message : String(err)}`;
      e.exitCode = null;
      this.log.warn({ pod: e.name, err: e.message }, 'FAILED to start');
      this.backoff(e);
    } finally {
      e.launching = false;
    }
  }

  private onExit(e: Entry, run: RunningPod, code: number, message?: string): void {
    if (e.run !== run) return;
    e.run = undefined;
    if (e.stopping) return;
    e.exitCode = code;
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

  // Which runtime runs this order, and with what. {wait} = not startable now (reason).
  private async plan(o: RunOrder): Promise<{ runtime: Runtime; spec: PodSpec } | { wait: string }> {
    const image = String(o.image ?? '');
    let kind: RuntimeName;
    let module: Uint8Array | undefined;
    if (image === 'process' || image.startsWith('process:')) kind = 'process';
    else if (image.startsWith('sicf:') || image.startsWith('wasm:')) {
      const ref = image.replace(/^(sicf|wasm):/, '');
      const pulled = await this.pull(ref);
      if ('wait' in pulled) return pulled;
      if (pulled.wasm) {
        kind = 'wasm';
        module = pulled.wasm;
      } else {
        return {
          wait: `image ${image} is a container image in cells; running those needs Docker with SICF load, which this agent does not do`,
        };
      }
    } else kind = 'docker';
    const runtime = this.runtimes.get(kind);
    if (!runtime) {
      return {
        wait: `image ${image} needs the ${kind} runtime; this node runs ${this.enabledRuntimes().join(', ') || 'none'}`,
      };
    }
    const secretFiles = await this.secrets(o);
    return {
      runtime,
      spec: {
        pod: o.name,
        node: this.opts.name,
        deployment: String(o.deployment ?? ''),
        image: kind === 'wasm' ? image.replace(/^(sicf|wasm):/, '') : image,
        command: String(o.command ?? ''),
        env: parseEnv(String(o.env ?? '')),
        cpuReq: Number(o.cpu_req) || 0,
        memReq: Number(o.mem_req) || 0,
        ports: parsePorts(String(o.ports ?? '')),
        specHash: String(o.spec_hash ?? ''),
        secretFiles,
        logFile: this.logFile(o.name),
        module,
      },
    };
  }

  // Fetch the image from the apiserver's Images/Layers tabs and verify every digest.
  private async pull(ref: string): Promise<{ wasm?: Uint8Array } | { wait: string }> {
    try {
      const [images, layers] = await Promise.all([this.client.get('images'), this.client.get('layers')]);
      const img = images.find((r) => r.name === ref);
      const firstLayer = String(img?.layers ?? '').split(',')[0];
      const cached = firstLayer ? this.modules.get(firstLayer) : undefined;
      if (cached && String(img?.layers).split(',').length === 1) return { wasm: cached };
      const pulled = pullImage({ images: images as never, layers: layers as never }, ref);
      if (pulled.config.architecture !== 'wasm') return {};
      const layer = pulled.layers[0];
      if (!layer || pulled.layers.length !== 1)
        return { wait: `image ${ref}: a wasm image must have exactly one layer` };
      this.modules.set(layer.digest, layer.bytes);
      while (this.modules.size > LIMITS.imageCacheEntries)
        this.modules.delete(this.modules.keys().next().value as string);
      return { wasm: layer.bytes };
    } catch (e) {
      if (e instanceof ImageError) return { wait: e.message };
      return { wait: `cannot fetch image ${ref}: ${e instanceof Error ? e.message : String(e)}` };
    }
  }

  private async secrets(o: RunOrder): Promise<{ file: string; path: string }[]> {
    const wanted = String(o.secret_files ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    if (wanted.length === 0) return [];
    const rows = await this.client.get('secrets');
    const out: { file: string; path: string }[] = [];
    for (const w of wanted) {
      const i = w.indexOf(':');
      const name = i < 0 ? w : w.slice(0, i);
      const target = i < 0 ? `/run/secrets/${name}` : w.slice(i + 1);
      if (!isObjectName(name) || !SECRET_TARGET.test(target)) {
        this.log.warn(
          { pod: o.name, item: w.slice(0, 64) },
          'secret_files item ignored: use secretName:/absolute/path',
        );
        continue;
      }
      const row = rows.find((r) => r.name === name);
      if (!row) {
        this.log.warn({ pod: o.name, secret: name }, 'secret not found');
        continue;
      }
      const data = String(row.data ?? '');
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(data)) {
        this.log.warn({ pod: o.name, secret: name }, 'secret is not valid base64');
        continue;
      }
      const file = pathInside(path.join(this.workDir, 'secrets'), `${o.name}.${name}`);
      const fd = openFresh(file);
      try {
        writeSync(fd, Buffer.from(data, 'base64'));
      } finally {
        closeSync(fd);
      }
      out.push({ file, path: target });
    }
    return out;
  }
}

// Where a secret file appears in the pod: an absolute path without "..", ":" or "," (docker's -v
// separator and the cell's list separator).
const SECRET_TARGET = /^(?!.*\/\.\.(\/|$))\/[^:,]{1,1023}$/;

function finishedMessage(code: number): string {
  return code === 0 ? 'completed (exit code 0)' : `exited with code ${code}`;
}

export function parseEnv(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const item of text.split(',')) {
    const s = item.trim();
    const i = s.indexOf('=');
    if (i > 0) env[s.slice(0, i)] = s.slice(i + 1);
  }
  return env;
}

export function parsePorts(text: string): PodSpec['ports'] {
  const out: PodSpec['ports'] = [];
  for (const item of text.split(',')) {
    const m = /^\s*(\d+):(\d+)(?:\/(tcp|udp))?\s*$/i.exec(item);
    if (m)
      out.push({
        host: Number(m[1]),
        container: Number(m[2]),
        proto: (m[3]?.toLowerCase() ?? 'tcp') as 'tcp' | 'udp',
      });
  }
  return out;
}

// docker-ps style "0.0.0.0:30000->80/tcp, …", the text the reference kubelet reports.
export function portsText(assigned: string): string {
  return parsePorts(String(assigned ?? ''))
    .map((p) => `0.0.0.0:${p.host}->${p.container}/${p.proto}`)
    .join(', ');
}
