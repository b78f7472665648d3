// The machine's own word on how it is doing, in a small file a container probe can read with a
// shell builtin (no node process, no API access):
//
//   booting: 3.1 M instructions, 0.4 s since power-on
//   booted: Oberon.Loop reached at 2026-11-29T12:30:01Z after 3.1 M instructions (0.6 s)
//   trouble: relay rk-air-lab unresolvable since 2026-11-29T12:30:01Z (getaddrinfo ENOTFOUND rk-air-lab)
//   trouble: the disk has no Boot.rsc, KubeNet.rsc (named by the boot commands); seed it with `retrokube disk build-kube`
//   trouble: 2 branches into the void (each reset the machine), the last at 2026-11-29T12:31:10Z
//   stopped: SIGTERM at 2026-11-29T12:40:00Z
//
// The first line is what a probe prints (the kubelet quotes it in its `Unhealthy` event); it stays
// the same while the situation does, so the kubelet counts one event up instead of writing new
// ones. `key: value` lines follow for people (`kubectl exec ... cat`). The file is replaced
// atomically (write + rename) and only when its text changes: a booted, quiet machine never
// writes it.
import fs from 'node:fs';
import path from 'node:path';
import { OberonVolume } from './fs/volume.ts';
import type { MachineState } from './protocol.ts';

export const STATUS_LIMITS = {
  bootPollMs: 100, // while booting: look often, so the boot time is known to a tenth of a second
  bootWriteMs: 1000, // while booting: the instruction count in the file moves at most once a second
  watchMs: 5000, // after boot: one state query every 5 s looks for trouble (no write unless it changed)
  voidHoldMs: 60_000, // a branch into the void keeps the machine in trouble this long (several probe periods)
  relayGraceMs: 10_000, // a relay name unresolvable this long is trouble (cluster DNS may lag a new Service)
  lineChars: 200, // the first line is quoted in an event: keep it short
} as const;

export type MachinePhase = 'booting' | 'booted' | 'trouble' | 'stopped';

/** What the status is made of; everything the writer has learned so far. */
export interface StatusFacts {
  now: number;
  poweredOn: number;
  /** The latest state from the machine (null before it first answered). */
  state: MachineState | null;
  /** When Oberon.Loop was first seen, and after how many instructions. */
  booted: { at: number; instructions: number } | null;
  /** Object files the boot commands need that are not on the disk (e.g. Boot.rsc, KubeNet.rsc). */
  missingModules: readonly string[];
  /** The relay's host name (for the message), when the machine is on an air. */
  relayHost?: string;
  /** When the count of branches into the void last went up. */
  lastVoidAt: number | null;
  /** Why the machine stopped (the process is ending). */
  stopped?: string;
}

const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const mega = (n: number): string => `${(n / 1e6).toFixed(1)} M`;
// The wall clock can step back between two readings: a person reads "0.0 s", never "-0.0 s".
const secs = (ms: number): string => `${(Math.max(0, ms) / 1000).toFixed(1)} s`;

/** The phase and the one line a probe prints (pure). */
export function statusLine(f: StatusFacts): { phase: MachinePhase; line: string } {
  const out = (phase: MachinePhase, text: string) => ({
    phase,
    line: `${phase}: ${text}`.slice(0, STATUS_LIMITS.lineChars),
  });
  if (f.stopped !== undefined) return out('stopped', `${f.stopped} at ${iso(f.now)}`);
  if (f.missingModules.length > 0)
    return out(
      'trouble',
      `the disk has no ${f.missingModules.join(', ')} (named by the boot commands); seed it with \`retrokube disk build-kube\``,
    );
  const air = f.state?.air;
  if (air?.unresolvedSince != null && f.now - air.unresolvedSince >= STATUS_LIMITS.relayGraceMs)
    return out(
      'trouble',
      `relay ${f.relayHost ?? 'host'} unresolvable since ${iso(air.unresolvedSince)}${air.resolveError ? ` (${air.resolveError})` : ''}`,
    );
  const voids = f.state?.voidFetches ?? 0;
  if (voids > 0 && f.lastVoidAt !== null && f.now - f.lastVoidAt < STATUS_LIMITS.voidHoldMs)
    return out(
      'trouble',
      `${voids} ${voids === 1 ? 'branch' : 'branches'} into the void (each reset the machine), the last at ${iso(f.lastVoidAt)}`,
    );
  if (f.booted !== null)
    return out(
      'booted',
      `Oberon.Loop reached at ${iso(f.booted.at)} after ${mega(f.booted.instructions)} instructions (${secs(f.booted.at - f.poweredOn)})`,
    );
  return out(
    'booting',
    `${mega(f.state?.instructions ?? 0)} instructions, ${secs(f.now - f.poweredOn)} since power-on`,
  );
}

/** The whole file: the probe's line, then details for people (pure; no live counters, so it rests). */
export function statusText(f: StatusFacts): string {
  const { phase, line } = statusLine(f);
  const rows: Array<[string, string | number | undefined]> = [
    ['phase', phase],
    ['poweredOn', iso(f.poweredOn)],
    ['bootedAt', f.booted ? iso(f.booted.at) : undefined],
    ['bootInstructions', f.booted?.instructions],
    ['voidFetches', f.state?.voidFetches ?? 0],
    ['missingModules', f.missingModules.length ? f.missingModules.join(' ') : undefined],
    ['relay', f.relayHost],
    [
      'relayUnresolvedSince',
      f.state?.air?.unresolvedSince != null ? iso(f.state.air.unresolvedSince) : undefined,
    ],
  ];
  return `${[line, ...rows.filter(([, v]) => v !== undefined).map(([k, v]) => `${k}: ${v}`)].join('\n')}\n`;
}

/** Object files the boot commands need (Boot, which reads them, and each command's module). */
export function modulesNamedBy(commands: string | undefined): string[] {
  if (!commands?.trim()) return [];
  const mods = new Set<string>(['Boot']);
  for (const item of commands.split(/[;\r\n]/)) {
    const m = /^\s*([A-Za-z][A-Za-z0-9]*)\.[A-Za-z][A-Za-z0-9]*/.exec(item);
    if (m) mods.add(m[1]);
  }
  return [...mods];
}

/** Which of the modules the boot commands need have no .rsc on the disk. */
export async function missingModules(disk: string, commands: string | undefined): Promise<string[]> {
  const need = modulesNamedBy(commands);
  if (need.length === 0) return [];
  const vol = await OberonVolume.open(disk);
  return need.map((m) => `${m}.rsc`).filter((f) => !vol.exists(f));
}

/** Replaces the file atomically (a probe never reads half a file). */
export function writeStatusFile(file: string, text: string): void {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.tmp`);
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

/** The part of a MachineRunner the watcher needs. */
export interface StateSource {
  state(): Promise<MachineState>;
}

/**
 * Keeps the status file of a running machine: often while it boots, every few seconds after, and
 * writes only when the text changed. `stop(reason)` writes the final `stopped:` line.
 */
export class StatusFileWriter {
  readonly file: string;
  private readonly facts: StatusFacts;
  private source: StateSource | null = null;
  private timer: NodeJS.Timeout | null = null;
  private written = '';
  private lastWriteAt = 0;
  private lastVoids = 0;
  private running = true;
  /** Times the file was (re)written; a quiet booted machine adds none. */
  writes = 0;

  private readonly watchMs: number;

  constructor(
    file: string,
    opts: { relayHost?: string; missingModules?: readonly string[]; watchMs?: number } = {},
  ) {
    this.file = file;
    this.watchMs = opts.watchMs ?? STATUS_LIMITS.watchMs;
    const now = Date.now();
    this.facts = {
      now,
      poweredOn: now,
      state: null,
      booted: null,
      missingModules: opts.missingModules ?? [],
      relayHost: opts.relayHost,
      lastVoidAt: null,
    };
    this.flush(true); // at once: a file left by a previous run must not speak for this one
  }

  /** The object files the boot commands need but the disk lacks (found after the first write). */
  setMissingModules(files: readonly string[]): void {
    this.facts.missingModules = files;
    this.flush(true);
  }

  get phase(): MachinePhase {
    return statusLine({ ...this.facts, now: Date.now() }).phase;
  }

  /** Start following a machine (power-on is now). */
  follow(source: StateSource): void {
    this.source = source;
    this.facts.poweredOn = Date.now();
    this.tick();
  }

  private tick(): void {
    this.timer = null;
    const source = this.source;
    if (!this.running || source === null) return;
    source
      .state()
      .then((st) => {
        if (!this.running) return;
        const now = Date.now();
        this.facts.now = now;
        this.facts.state = st;
        if (st.booted && this.facts.booted === null)
          this.facts.booted = { at: now, instructions: st.instructions };
        if (st.voidFetches > this.lastVoids) this.facts.lastVoidAt = now;
        this.lastVoids = st.voidFetches;
        this.flush(this.facts.booted !== null || now - this.lastWriteAt >= STATUS_LIMITS.bootWriteMs);
      })
      .catch(() => undefined) // a stopping machine stops answering; stop() writes the last word
      .finally(() => {
        if (!this.running) return;
        const ms = this.facts.booted === null ? STATUS_LIMITS.bootPollMs : this.watchMs;
        this.timer = setTimeout(() => this.tick(), ms);
        this.timer.unref();
      });
  }

  private flush(allowed: boolean): void {
    const text = statusText(this.facts);
    if (!allowed || text === this.written) return;
    writeStatusFile(this.file, text);
    this.written = text;
    this.lastWriteAt = Date.now();
    this.writes++;
  }

  /** Write the last word (synchronously: also usable from a process 'exit' handler). */
  stop(reason: string): void {
    if (this.facts.stopped !== undefined) return; // the first word on stopping stays
    this.running = false;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.facts.now = Date.now();
    this.facts.stopped = reason;
    try {
      this.flush(true);
    } catch {
      // the folder may be gone (a test's temp dir); nothing else to tell
    }
  }
}
