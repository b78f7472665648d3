// The manager runs the controllers of one operator process: shared informers (one per type,
// namespace and selector), the HTTP endpoints, and optional Lease leader election. Only the
// leader runs informers and workers; a standby serves probes and waits.
import type http from 'node:http';
import type { Registry } from 'prom-client';
import { logger } from '../util/log.ts';
import type { KubeClient, KubeObject, ResourceType } from './client.ts';
import { Controller, type ControllerDefinition, type InformerFilter, typeId } from './controller.ts';
import { EventRecorder } from './events.ts';
import { Informer } from './informer.ts';
import { type LeaderElectionOptions, LeaderElector } from './leader.ts';
import { createOperatorMetrics, type OperatorMetrics } from './metrics.ts';
import { MANAGED_SELECTOR } from './objects.ts';
import { Reconnect } from './reconnect.ts';
import { RelistGate } from './relist-gate.ts';
import { type CheckResult, close, createHandler, listen } from './server.ts';

export interface ManagerOptions {
  client: KubeClient;
  /** Watch and reconcile only this namespace (default: all namespaces). */
  namespace?: string;
  /** Lease leader election; omit to lead unconditionally (a single replica). */
  leaderElection?: Omit<LeaderElectionOptions, 'onStartedLeading' | 'onStoppedLeading'>;
  /** Port for /metrics; undefined = no listener, 0 = any free port. */
  metricsPort?: number;
  /** Port for /healthz and /readyz; undefined = no listener, 0 = any free port. */
  healthPort?: number;
  bindAddress?: string;
  registry?: Registry;
  /** Informer resync period (ms), mostly for tests and benchmarks. */
  resyncMs?: number;
  /** Called when leadership is lost after it was held: the process should exit and restart. */
  onLostLeadership?: () => void;
}

export class Manager {
  readonly client: KubeClient;
  readonly metrics: OperatorMetrics;
  readonly recorder: EventRecorder;
  readonly controllers: Controller[] = [];
  readonly elector: LeaderElector | undefined;
  private readonly opts: ManagerOptions;
  private readonly informers = new Map<string, Informer<KubeObject>>();
  /** The informers' LISTs take turns (relist-gate.ts): no burst of every kind after a restart. */
  private readonly relistGate = new RelistGate();
  /** ...and wake each other when the server is back (reconnect.ts). */
  private readonly reconnect = new Reconnect();
  /** Informers some controller cannot start without (the rest belong to optionalOwns). */
  private readonly required = new Set<string>();
  private readonly servers: http.Server[] = [];
  private running = false;
  private stopped = false;
  private electorLoop: Promise<void> | undefined;
  private readonly log = logger('manager');

  constructor(opts: ManagerOptions) {
    this.opts = opts;
    this.client = opts.client;
    this.metrics = createOperatorMetrics(opts.registry);
    this.client.observe((method, _path, status) =>
      this.metrics.restRequests.inc({ method, code: String(status) }),
    );
    const identity = opts.leaderElection?.identity;
    this.recorder = new EventRecorder(this.client, 'retrokube.io/operator', identity ?? 'retrokube');
    if (opts.leaderElection) {
      const name = opts.leaderElection.name;
      this.elector = new LeaderElector(this.client, {
        ...opts.leaderElection,
        onStartedLeading: () => {
          this.metrics.leader.set({ name }, 1);
          void this.startControllers();
        },
        onStoppedLeading: () => {
          this.metrics.leader.set({ name }, 0);
          if (!this.stopped) {
            this.log.error('Lost leadership; stopping controllers');
            void this.stopControllers().then(() => this.opts.onLostLeadership?.());
          }
        },
      });
    }
  }

  add(def: ControllerDefinition): Controller {
    const c = new Controller(def, {
      client: this.client,
      recorder: this.recorder,
      metrics: this.metrics,
      informer: (t, managedOnly, filter, optional) => this.informer(t, managedOnly, filter, optional),
    });
    this.controllers.push(c);
    return c;
  }

  /**
   * One shared informer per type, selector and filter; owned types watch only retrokube's objects.
   * An owned type that is also some controller's primary (OberonAirs and OberonMachines, which an
   * OberonKube owns) reads the primary's informer, which already holds every one of them: two
   * caches of the same objects cost 1.9 MiB of heap at 300 OberonKubes (a heap snapshot), one WATCH
   * more each. The owner's handlers look only at objects whose controller it is, as before; this
   * needs the primary's controller added first, as operator-run.ts does.
   */
  private informer(
    type: ResourceType,
    managedOnly: boolean,
    filter?: InformerFilter,
    optional = false,
  ): Informer<KubeObject> {
    const everyOne = `${typeId(type)}|false|`;
    const id =
      managedOnly && !filter && this.informers.has(everyOne)
        ? everyOne
        : `${typeId(type)}|${managedOnly}|${filter?.id ?? ''}`;
    if (!optional) this.required.add(id); // optional only while every user says so
    let inf = this.informers.get(id);
    if (!inf) {
      inf = new Informer<KubeObject>(this.client, {
        type,
        namespace: this.opts.namespace,
        labelSelector: managedOnly ? MANAGED_SELECTOR : undefined,
        keep: filter?.keep,
        resyncMs: this.opts.resyncMs,
        relistGate: this.relistGate,
        reconnect: this.reconnect,
        onOperation: (operation) =>
          this.metrics.informerOperations.inc({ resource: `${type.plural}.${type.group}`, operation }),
      });
      this.informers.set(id, inf);
    }
    return inf;
  }

  get isLeader(): boolean {
    return this.elector ? this.elector.isLeader : this.running;
  }

  /**
   * Ready when leading with the required caches synced, or when standing by for the lease. An
   * optional kind still waiting (its CRD absent) is named in the answer but does not fail it:
   * every other controller works meanwhile.
   */
  ready(): CheckResult {
    if (this.elector && !this.elector.isLeader) return true;
    if (!this.running) return 'controllers not started';
    const pending = [...this.informers.entries()].filter(([, i]) => !i.hasSynced);
    const name = (i: Informer<KubeObject>) =>
      `${i.opts.type.plural}${i.opts.type.group ? `.${i.opts.type.group}` : ''}${i.absent ? ' (not served: CRD not installed)' : ''}`;
    const blocking = pending.filter(([id]) => this.required.has(id)).map(([, i]) => name(i));
    if (blocking.length) return `caches not synced: ${blocking.join(', ')}`;
    const waiting = pending.map(([, i]) => name(i));
    return waiting.length
      ? { ok: true, text: `ok; waiting for optional kinds: ${waiting.join(', ')}` }
      : true;
  }

  /** Starts the endpoints, then the controllers (at once, or when this instance becomes leader). */
  async start(): Promise<void> {
    const handler = createHandler({
      registry: this.metrics.registry,
      healthz: () => true,
      readyz: () => this.ready(),
    });
    const host = this.opts.bindAddress ?? '0.0.0.0';
    if (this.opts.metricsPort !== undefined)
      this.servers.push(await listen(handler, this.opts.metricsPort, host));
    const hp = this.opts.healthPort;
    if (hp !== undefined && (hp === 0 || hp !== this.opts.metricsPort)) {
      this.servers.push(await listen(handler, hp, host));
    }
    if (this.elector) {
      this.electorLoop = this.elector.start();
    } else {
      await this.startControllers();
    }
  }

  get httpServers(): readonly http.Server[] {
    return this.servers;
  }

  private async startControllers(): Promise<void> {
    if (this.running || this.stopped) return;
    this.running = true;
    this.log.info(
      { controllers: this.controllers.map((c) => c.def.name), namespace: this.opts.namespace ?? '*' },
      'Starting controllers',
    );
    for (const i of this.informers.values()) void i.start();
    // Each controller starts once its own required caches hold a LIST: one kind whose CRD is
    // missing never holds back the others.
    await Promise.all(
      this.controllers.map(async (c) => {
        await Promise.all(c.requiredInformers.map((i) => i.start()));
        if (this.running) c.start();
      }),
    );
  }

  private async stopControllers(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    await Promise.all(this.controllers.map((c) => c.stop()));
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
  }

  /** Stops workers and informers, releases the lease, closes the endpoints. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.stopControllers();
    if (this.elector) {
      await this.elector.stop();
      await this.electorLoop;
    }
    await Promise.all(this.servers.map((s) => close(s)));
    this.client.close();
  }
}
