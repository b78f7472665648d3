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
import { close, createHandler, listen } from './server.ts';

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
      informer: (t, managedOnly, filter) => this.informer(t, managedOnly, filter),
    });
    this.controllers.push(c);
    return c;
  }

  /** One shared informer per type, selector and filter; owned types watch only retrokube's objects. */
  private informer(type: ResourceType, managedOnly: boolean, filter?: InformerFilter): Informer<KubeObject> {
    const id = `${typeId(type)}|${managedOnly}|${filter?.id ?? ''}`;
    let inf = this.informers.get(id);
    if (!inf) {
      inf = new Informer<KubeObject>(this.client, {
        type,
        namespace: this.opts.namespace,
        labelSelector: managedOnly ? MANAGED_SELECTOR : undefined,
        keep: filter?.keep,
        resyncMs: this.opts.resyncMs,
      });
      this.informers.set(id, inf);
    }
    return inf;
  }

  get isLeader(): boolean {
    return this.elector ? this.elector.isLeader : this.running;
  }

  /** Ready when leading with synced caches, or when standing by for the lease. */
  ready(): boolean | string {
    if (this.elector && !this.elector.isLeader) return true;
    const pending = [...this.informers.values()].filter((i) => !i.hasSynced).map((i) => i.opts.type.plural);
    if (!this.running) return 'controllers not started';
    return pending.length ? `caches not synced: ${pending.join(', ')}` : true;
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
    await Promise.all([...this.informers.values()].map((i) => i.start()));
    if (!this.running) return;
    for (const c of this.controllers) c.start();
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
