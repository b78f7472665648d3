// Kubernetes Events (events.k8s.io/v1) for notable transitions, deduplicated: the same
// (object, type, reason, note) within the dedup window becomes one Event whose `series` counts
// repeats, and the series is written at most once per seriesFlushMs. A Degraded object that is
// reconciled again and again therefore does not flood the API server with writes.
import { randomBytes } from 'node:crypto';
import { logger } from '../util/log.ts';
import { CORE, type KubeClient, type KubeObject } from './client.ts';

export const LIMITS = {
  dedupWindowMs: 10 * 60_000, // an identical event within 10 minutes joins the earlier one's series
  seriesFlushMs: 60_000, // a series count is written at most once a minute
  noteMax: 1024, // events.k8s.io rejects notes longer than 1 kB
  maxTracked: 4096, // bound memory: the oldest tracked event is forgotten beyond this
} as const;

export type EventType = 'Normal' | 'Warning';

interface Tracked {
  name: string;
  namespace: string;
  first: number;
  count: number;
  lastWrite: number;
}

function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/Z$/, '000Z');
}

export class EventRecorder {
  private readonly client: KubeClient;
  private readonly controller: string;
  private readonly instance: string;
  private readonly seen = new Map<string, Tracked>();
  private readonly log = logger('events');
  private readonly now: () => number;

  constructor(
    client: KubeClient,
    controller = 'retrokube',
    instance = 'retrokube',
    now: () => number = Date.now,
  ) {
    this.client = client;
    this.controller = controller;
    this.instance = instance;
    this.now = now;
  }

  /** Records an event about `regarding`; never throws (an event is not worth failing a reconcile). */
  async record(
    regarding: KubeObject,
    type: EventType,
    reason: string,
    note: string,
    action = 'Reconcile',
  ): Promise<void> {
    const m = regarding.metadata;
    const namespace = m.namespace ?? 'default';
    const key = [m.uid, type, reason, note].join('\u0000');
    const t = this.now();
    const prev = this.seen.get(key);
    try {
      if (prev && t - prev.first < LIMITS.dedupWindowMs) {
        prev.count++;
        if (t - prev.lastWrite < LIMITS.seriesFlushMs) return;
        prev.lastWrite = t;
        await this.client.mergePatch(CORE.event, prev.namespace, prev.name, {
          series: { count: prev.count, lastObservedTime: microTime(t) },
        });
        return;
      }
      const name = `${m.name}.${randomBytes(8).toString('hex')}`;
      if (this.seen.size >= LIMITS.maxTracked) this.seen.delete(this.seen.keys().next().value as string);
      this.seen.set(key, { name, namespace, first: t, count: 1, lastWrite: t });
      await this.client.create(CORE.event, {
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        metadata: { name, namespace },
        eventTime: microTime(t),
        reportingController: this.controller,
        reportingInstance: this.instance,
        action,
        reason,
        type,
        note: note.slice(0, LIMITS.noteMax),
        regarding: {
          apiVersion: regarding.apiVersion,
          kind: regarding.kind,
          name: m.name,
          namespace: m.namespace,
          uid: m.uid,
          resourceVersion: m.resourceVersion,
        },
      });
    } catch (err) {
      this.log.warn({ err: (err as Error).message, reason }, 'Could not record an event');
    }
  }
}
