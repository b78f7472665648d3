// Google's per-minute request quotas: per user (bearer token or API key) and per project, reads
// and writes counted separately over a sliding window; a request over a quota gets Google's
// 429 RESOURCE_EXHAUSTED with its ErrorInfo, and is not counted.
import { ApiError } from './http-api.ts';

/** Google counts quotas per minute. */
const WINDOW_MS = 60_000;

export type QuotaName =
  | 'readsPerMinutePerUser'
  | 'writesPerMinutePerUser'
  | 'readsPerMinutePerProject'
  | 'writesPerMinutePerProject';

export interface EmulatorStats {
  reads: number;
  writes: number;
  rejected429: number;
  writeTimes: number[]; // ms timestamps of accepted write requests
}

export class Quota {
  private readonly usage = new Map<string, number[]>(); // "<user|project>:<read|write>" → timestamps

  private readonly limits: Record<QuotaName, number>;
  private readonly now: () => number;
  private readonly project: string;
  private readonly stats: EmulatorStats;

  constructor(limits: Record<QuotaName, number>, now: () => number, project: string, stats: EmulatorStats) {
    this.limits = limits;
    this.now = now;
    this.project = project;
    this.stats = stats;
  }

  /** Counts one request of `user`, or throws Google's 429 when a window is full (then nothing is counted). */
  charge(user: string, kind: 'read' | 'write'): void {
    const t = this.now();
    const isRead = kind === 'read';
    const checks: [string, number, string, string][] = [
      [
        `${user}:${kind}`,
        isRead ? this.limits.readsPerMinutePerUser : this.limits.writesPerMinutePerUser,
        isRead ? 'Read requests per minute per user' : 'Write requests per minute per user',
        isRead ? 'ReadRequestsPerMinutePerUser' : 'WriteRequestsPerMinutePerUser',
      ],
      [
        `project:${kind}`,
        isRead ? this.limits.readsPerMinutePerProject : this.limits.writesPerMinutePerProject,
        isRead ? 'Read requests per minute' : 'Write requests per minute',
        isRead ? 'ReadRequestsPerMinutePerProject' : 'WriteRequestsPerMinutePerProject',
      ],
    ];
    for (const [key, limit, limitName, limitId] of checks) {
      const list = (this.usage.get(key) ?? []).filter((x) => t - x < WINDOW_MS);
      this.usage.set(key, list);
      if (list.length >= limit) {
        this.stats.rejected429++;
        const metric = isRead ? 'Read requests' : 'Write requests';
        throw new ApiError(
          429,
          'RESOURCE_EXHAUSTED',
          `Quota exceeded for quota metric '${metric}' and limit '${limitName}' of service 'sheets.googleapis.com' for consumer 'project_number:${this.project}'.`,
          [
            {
              '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
              reason: 'RATE_LIMIT_EXCEEDED',
              domain: 'googleapis.com',
              metadata: {
                quota_limit: limitId,
                quota_metric: `sheets.googleapis.com/${kind}_requests`,
                quota_limit_value: String(limit),
                consumer: `projects/${this.project}`,
                service: 'sheets.googleapis.com',
                quota_location: 'global',
              },
            },
            {
              '@type': 'type.googleapis.com/google.rpc.Help',
              links: [
                {
                  description: 'Request a higher quota limit.',
                  url: 'https://cloud.google.com/docs/quotas/help/request_increase',
                },
              ],
            },
          ],
        );
      }
    }
    for (const [key] of checks) this.usage.get(key)!.push(t);
    if (isRead) this.stats.reads++;
    else {
      this.stats.writes++;
      this.stats.writeTimes.push(t);
    }
  }
}
