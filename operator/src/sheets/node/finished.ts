// Finished pods kept on disk (one JSON file per pod, by spec_hash), so a restarted agent reports a
// pod that completed as Succeeded/Failed instead of running it again — the apiserver orders every
// placed pod Running.

import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { isObjectName, nameProblem, pathInside } from '../names.ts';

export interface FinishedRecord {
  spec_hash: string;
  phase: 'Succeeded' | 'Failed';
  exit_code: number;
  id: string | null;
  message: string | null;
}

export class FinishedPods {
  private readonly dir: string;
  private readonly log: Logger;
  constructor(dir: string, log: Logger) {
    this.dir = dir;
    this.log = log;
  }

  /** The pod's file; throws for a name that is not an object name or would leave the folder. */
  private file(pod: string): string {
    if (!isObjectName(pod)) throw new Error(`pod ${nameProblem(pod)}`);
    return pathInside(this.dir, `${pod}.json`);
  }

  /** The record kept for this pod and spec, if any (an unreadable one counts as none). */
  read(pod: string, specHash: string): FinishedRecord | undefined {
    try {
      const d = JSON.parse(readFileSync(this.file(pod), 'utf8')) as Partial<FinishedRecord>;
      if (d.spec_hash !== specHash || (d.phase !== 'Succeeded' && d.phase !== 'Failed')) return undefined;
      if (typeof d.exit_code !== 'number') return undefined;
      return {
        spec_hash: specHash,
        phase: d.phase,
        exit_code: d.exit_code,
        id: d.id ?? null,
        message: d.message ?? null,
      };
    } catch {
      return undefined; // none kept (or unreadable): the pod runs
    }
  }

  write(pod: string, r: FinishedRecord): void {
    try {
      writeFileSync(this.file(pod), JSON.stringify(r));
    } catch (err) {
      this.log.warn(
        { pod, err: String(err) },
        'cannot keep the finished state; a restarted agent runs the pod again',
      );
    }
  }

  forget(pod: string): void {
    try {
      rmSync(this.file(pod), { force: true });
    } catch {
      // a name that cannot have a file has none to forget
    }
  }
}

/** The folder's path under an agent's work folder. */
export const finishedDir = (workDir: string): string => path.join(workDir, 'done');
