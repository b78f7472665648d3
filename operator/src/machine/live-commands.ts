// Live commands for a running plane: a file (in a pod, a mounted ConfigMap the operator writes)
// holds the plane's desired deployments as `Kube.Apply name replicas Module` lines — full state,
// not a queue. The emulator sends every line once at start and then each line that is new or
// changed, through the serial port that Boot's task keeps reading. So a changed `web 6 Ticker2`
// reaches the running plane as a real rolling update, and the plane never restarts for it.
//
// Only lines of two shapes are sent — `Kube.Apply ...` and `Kube.Hold N` (how many nodes a new
// plane waits for before it binds its first pods): the file is data, and nothing from data runs as
// a command unless it is one of the verbs this channel exists for.
import { readFile } from 'node:fs/promises';

export const LIVE_LIMITS = {
  pollMs: 1_000, // a kubelet refreshes a ConfigMap volume within about a minute; a second is plenty
  maxFileBytes: 8_192, // 20 deployments of at most ~45 characters each fit many times over
  maxLines: 64, // Kube keeps at most a few dozen deployments
} as const;

/**
 * `Kube.Apply <name> <replicas> <Module>` with the same bounds as the OberonKube schema's items, or
 * `Kube.Hold <nodes>` (an OberonKube has at most 20 nodes; Kube takes up to 256).
 */
export const LIVE_LINE =
  /^(Kube\.Apply [a-z][a-z0-9]{0,14} [0-9]{1,3} [A-Za-z][A-Za-z0-9]{0,14}|Kube\.Hold [1-9][0-9]{0,2})$/;

export interface LiveParse {
  lines: string[];
  refused: string[];
}

/** The file's accepted lines (in order, once each) and the ones refused, with blank lines ignored. */
export function parseLiveCommands(text: string): LiveParse {
  const lines: string[] = [];
  const refused: string[] = [];
  for (const raw of text.split(/\r?\n/).slice(0, LIVE_LIMITS.maxLines)) {
    const line = raw.trim().replace(/\s+/g, ' ');
    if (line === '' || line.startsWith('#')) continue;
    if (!LIVE_LINE.test(line)) refused.push(line.slice(0, 80));
    else if (!lines.includes(line)) lines.push(line);
  }
  return { lines, refused };
}

/** Lines to send now: those not sent in exactly this form before (a changed line is new). */
export function linesToSend(sent: ReadonlySet<string>, wanted: readonly string[]): string[] {
  return wanted.filter((l) => !sent.has(l));
}

export interface LiveCommandsOptions {
  path: string;
  /** Sends text to the machine's serial port (each command ended by a line feed). */
  feed(text: string): void;
  /** Told about refused lines and unreadable files, once per distinct problem. */
  warn(message: string): void;
  pollMs?: number;
}

/**
 * Turns one reading of the desired lines (full state) into what the serial port needs: the lines
 * new or changed since the last reading. The file watcher and the ConfigMap watcher
 * (live-configmap.ts) both hand it every text they read; `where` names the source in warnings.
 */
export function liveFeeder(o: { where: string; feed(text: string): void; warn(message: string): void }): {
  offer(text: string): void;
  problem(message: string): void;
} {
  const sent = new Set<string>();
  let lastProblem = '';
  const problem = (message: string) => {
    if (message !== lastProblem) o.warn(message);
    lastProblem = message;
  };
  const offer = (text: string) => {
    if (text.length > LIVE_LIMITS.maxFileBytes) {
      problem(`${o.where} is ${text.length} bytes, more than ${LIVE_LIMITS.maxFileBytes}; nothing sent`);
      return;
    }
    const { lines, refused } = parseLiveCommands(text);
    if (refused.length > 0)
      problem(
        `${o.where}: refused ${refused.length} line(s) that are not "Kube.Apply name N Module" or "Kube.Hold N": ${refused[0]}`,
      );
    else lastProblem = '';
    const fresh = linesToSend(sent, lines);
    // The leading line feed ends whatever the port held before (a boot command string need not
    // end with a separator, and Boot would read our line as the rest of it).
    if (fresh.length > 0) o.feed(`\n${fresh.join('\n')}\n`);
    // A line that left the text may come back later and must be sent again then.
    sent.clear();
    for (const l of lines) sent.add(l);
  };
  return { offer, problem };
}

/**
 * Watches the file and feeds new or changed lines. Polling, not fs.watch: a ConfigMap volume
 * changes by swapping a symlink, which inotify on the file itself does not see.
 */
export function watchLiveCommands(o: LiveCommandsOptions): { stop(): void; poll(): Promise<void> } {
  const feeder = liveFeeder({ where: o.path, feed: o.feed, warn: o.warn });
  let inFlight: Promise<void> | null = null;
  const readOnce = async () => {
    try {
      feeder.offer(await readFile(o.path, 'latin1'));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // A ConfigMap not written yet is normal at first; say it once.
      feeder.problem(
        code === 'ENOENT' ? `${o.path} does not exist yet; waiting` : `${o.path}: ${(e as Error).message}`,
      );
    }
  };
  // One read at a time; a poll asked for meanwhile waits for that read.
  const poll = (): Promise<void> => {
    inFlight ??= readOnce().finally(() => {
      inFlight = null;
    });
    return inFlight;
  };
  const timer = setInterval(() => void poll(), o.pollMs ?? LIVE_LIMITS.pollMs);
  timer.unref();
  void poll();
  return { stop: () => clearInterval(timer), poll };
}
