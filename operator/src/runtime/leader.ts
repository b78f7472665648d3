// Lease leader election (coordination.k8s.io/v1), client-go semantics:
// - a candidate takes the Lease when it is free (no holder) or its holder has not renewed it for
//   leaseDuration, measured on OUR clock from when we last saw the record change (no clock-skew trust);
// - the leader renews every retryPeriod; if it cannot renew for renewDeadline it stops leading;
// - on stop the leader releases the Lease (empty holder), so a standby takes over at once;
// - every write carries the observed resourceVersion, so two candidates never both win a round.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { logger } from '../util/log.ts';
import { CORE, isStatus, type KubeClient, type KubeObject } from './client.ts';

export const LIMITS = {
  leaseDurationMs: 15_000, // how long a standby waits for a silent leader (controller-runtime default)
  renewDeadlineMs: 10_000, // the leader gives up if it could not renew for this long
  retryPeriodMs: 2_000, // how often candidates try and the leader renews
} as const;

export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  identity?: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /** Release the Lease on stop (default true; false behaves like a crash: standbys wait for expiry). */
  releaseOnStop?: boolean;
  onStartedLeading?: () => void;
  onStoppedLeading?: () => void;
}

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

interface Lease extends KubeObject {
  spec?: LeaseSpec;
}

function microTime(d = new Date()): string {
  return d.toISOString().replace(/Z$/, '000Z');
}

export function defaultIdentity(): string {
  return `${hostname()}_${randomUUID().slice(0, 8)}`;
}

export class LeaderElector {
  readonly identity: string;
  private readonly client: KubeClient;
  private readonly o: Required<
    Omit<LeaderElectionOptions, 'onStartedLeading' | 'onStoppedLeading' | 'identity' | 'releaseOnStop'>
  >;
  private readonly releaseOnStop: boolean;
  private readonly cbs: Pick<LeaderElectionOptions, 'onStartedLeading' | 'onStoppedLeading'>;
  private leading = false;
  private stopping = false;
  private observed: { record: string; at: number } | undefined;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private readonly log;

  constructor(client: KubeClient, opts: LeaderElectionOptions) {
    this.client = client;
    this.identity = opts.identity ?? defaultIdentity();
    this.o = {
      namespace: opts.namespace,
      name: opts.name,
      leaseDurationMs: opts.leaseDurationMs ?? LIMITS.leaseDurationMs,
      renewDeadlineMs: opts.renewDeadlineMs ?? LIMITS.renewDeadlineMs,
      retryPeriodMs: opts.retryPeriodMs ?? LIMITS.retryPeriodMs,
    };
    if (this.o.renewDeadlineMs >= this.o.leaseDurationMs)
      throw new Error('renewDeadline must be shorter than leaseDuration');
    this.releaseOnStop = opts.releaseOnStop ?? true;
    this.cbs = { onStartedLeading: opts.onStartedLeading, onStoppedLeading: opts.onStoppedLeading };
    this.log = logger('leader', { lease: `${opts.namespace}/${opts.name}`, identity: this.identity });
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /** Runs until stop() or until leadership is lost; resolves then. */
  start(): Promise<void> {
    this.loop ??= this.run();
    return this.loop;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.loop;
  }

  private async pause(ms: number): Promise<void> {
    const ac = new AbortController();
    this.wake = () => ac.abort();
    await sleep(ms * (1 + Math.random() * 0.2), undefined, { signal: ac.signal }).catch(() => {});
    this.wake = undefined;
  }

  private async run(): Promise<void> {
    // Acquire.
    while (!this.stopping && !this.leading) {
      if (await this.tryAcquireOrRenew()) {
        this.leading = true;
        this.log.info('Became leader');
        this.cbs.onStartedLeading?.();
        break;
      }
      await this.pause(this.o.retryPeriodMs);
    }
    // Renew.
    let lastRenew = Date.now();
    while (!this.stopping && this.leading) {
      await this.pause(this.o.retryPeriodMs);
      if (this.stopping) break;
      if (await this.tryAcquireOrRenew()) {
        lastRenew = Date.now();
      } else if (Date.now() - lastRenew > this.o.renewDeadlineMs) {
        this.leading = false;
        this.log.warn('Lost the leader lease: could not renew within the deadline');
        this.cbs.onStoppedLeading?.();
        return;
      }
    }
    if (this.leading) {
      if (this.releaseOnStop) await this.release();
      this.leading = false;
      this.cbs.onStoppedLeading?.();
    }
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = new Date();
    try {
      const lease = await this.client.getOrUndefined<Lease>(CORE.lease, this.o.namespace, this.o.name);
      const durationSec = Math.ceil(this.o.leaseDurationMs / 1000);
      if (!lease) {
        await this.client.create<Lease>(CORE.lease, {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: this.o.name, namespace: this.o.namespace },
          spec: {
            holderIdentity: this.identity,
            leaseDurationSeconds: durationSec,
            acquireTime: microTime(now),
            renewTime: microTime(now),
            leaseTransitions: 0,
          },
        });
        return true;
      }
      const spec = lease.spec ?? {};
      const record = JSON.stringify([spec.holderIdentity, spec.renewTime]);
      if (this.observed?.record !== record) this.observed = { record, at: Date.now() };
      const holder = spec.holderIdentity ?? '';
      const expired = this.observed.at + (spec.leaseDurationSeconds ?? durationSec) * 1000 < Date.now();
      if (holder && holder !== this.identity && !expired) return false;
      const mine = holder === this.identity;
      const next: Lease = {
        ...lease,
        spec: {
          holderIdentity: this.identity,
          leaseDurationSeconds: durationSec,
          acquireTime: mine ? spec.acquireTime : microTime(now),
          renewTime: microTime(now),
          leaseTransitions: (spec.leaseTransitions ?? 0) + (mine ? 0 : 1),
        },
      };
      const saved = await this.client.replace<Lease>(CORE.lease, next);
      this.observed = {
        record: JSON.stringify([saved.spec?.holderIdentity, saved.spec?.renewTime]),
        at: Date.now(),
      };
      return true;
    } catch (err) {
      if (!isStatus(err, 409)) this.log.debug({ err: (err as Error).message }, 'Lease round failed');
      return false;
    }
  }

  private async release(): Promise<void> {
    try {
      const lease = await this.client.getOrUndefined<Lease>(CORE.lease, this.o.namespace, this.o.name);
      if (!lease || lease.spec?.holderIdentity !== this.identity) return;
      await this.client.replace<Lease>(CORE.lease, {
        ...lease,
        spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: microTime() },
      });
      this.log.info('Released the leader lease');
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'Could not release the leader lease; it will expire');
    }
  }
}
