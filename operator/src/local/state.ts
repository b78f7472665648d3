// The state folder of `retrokube up`: per-machine disks, the generated key, and `up.json`, which
// tells the companion verbs (down, machine off|on, air ..., kube apply|get, screen) where the
// running `up` listens. Also the small HTTP client those verbs use.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { cliName } from '../util/cli-name.ts';
import { privateSecret } from '../util/private-file.ts';
import { processAlive } from '../util/process.ts';

export const LIMITS = {
  clientTimeoutMs: 30_000, // a typed command or a screenshot answers well within this
  stateFile: 'up.json', // where the running `up` says where it listens
  keyFile: 'key', // the generated cluster key (mode 0600, never printed)
  logFile: 'up.log', // the JSON log lines of a running `up` (the console shows the view)
  agentLogFile: 'agents.log', // the sample Sheeternetes node agents' output (plain lines)
  givenKeyFile: 'up.key', // the key a FILE gave (Secret), kept 0600 while `up` runs, for the air verbs
  vncPasswordFile: 'vnc-password', // the machines' VNC password (#28.2: generated, 0600, reused)
} as const;

export interface UpState {
  pid: number;
  /** The `up` control endpoint (loopback HTTP). */
  control: string;
  /**
   * The air: its relay (UDP host and port), the relay's control endpoint (the `air` verbs'
   * --control; empty for an external relay) and the file holding the cluster key (0600; the key
   * itself is never written here).
   */
  air: { host?: string; port: number; control: string; keyFile?: string };
  cluster: string;
  machines: { name: string; role: 'plane' | 'node'; vnc: number | null; disk: string; on?: boolean }[];
  sheets?: { url: string };
  /** The web console's address, when it runs. */
  console?: string;
  /** The file holding the machines' VNC password (0600), when they have screens. */
  vncPasswordFile?: string;
  /** A fleet FILE: its clusters (machines above are named CLUSTER/MACHINE) and rollouts. */
  fleet?: {
    clusters: {
      name: string;
      kind: 'OberonKube' | 'SheetCluster';
      air?: { port: number; control: string };
      url?: string;
    }[];
    rollouts: string[];
  };
  startedAt: string;
}

/** --state, else $RETROKUBE_STATE, else $XDG_STATE_HOME/retrokube, else ./.retrokube. */
export function stateDir(explicit?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (explicit) return resolve(explicit);
  if (env.RETROKUBE_STATE) return resolve(env.RETROKUBE_STATE);
  if (env.XDG_STATE_HOME) return join(env.XDG_STATE_HOME, 'retrokube');
  return resolve('.retrokube');
}

export function readUpState(dir: string): UpState | null {
  const f = join(dir, LIMITS.stateFile);
  if (!existsSync(f)) return null;
  try {
    const st = JSON.parse(readFileSync(f, 'utf8')) as UpState;
    return processAlive(st.pid) ? st : null;
  } catch {
    return null;
  }
}

export function writeUpState(dir: string, st: UpState): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, LIMITS.stateFile), `${JSON.stringify(st, null, 2)}\n`);
}

export function removeUpState(dir: string): void {
  rmSync(join(dir, LIMITS.stateFile), { force: true });
}

/** The key kept in the state folder, made once (16 random hex digits). Never printed. */
export function stateKey(dir: string): string {
  const f = join(dir, LIMITS.keyFile);
  if (existsSync(f)) return readFileSync(f, 'utf8').trim();
  mkdirSync(dir, { recursive: true });
  const key = randomBytes(8).toString('hex');
  writeFileSync(f, `${key}\n`, { mode: 0o600 });
  return key;
}

/**
 * The VNC password of the machines `up` runs (#28.2): generated once into the state folder
 * (O_EXCL, 0600; 8 characters, all VNC Authentication uses), reused by later runs.
 */
export function upVncPassword(dir: string): { password: string; file: string } {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, LIMITS.vncPasswordFile);
  const password = privateSecret(
    file,
    () => randomBytes(6).toString('base64url'),
    (v) => /^[\x20-\x7e]{1,8}$/.test(v),
  );
  return { password, file };
}

/** Keeps a key given by the FILE where the air verbs find it while `up` runs; returns the file. */
export function writeGivenKey(dir: string, key: string): string {
  const f = join(dir, LIMITS.givenKeyFile);
  mkdirSync(dir, { recursive: true });
  writeFileSync(f, `${key}\n`, { mode: 0o600 });
  return f;
}

export function removeGivenKey(dir: string): void {
  rmSync(join(dir, LIMITS.givenKeyFile), { force: true });
}

/** What a station needs to hear the running `up`'s air: relay address, cluster, key (hex). */
export interface UpAir {
  host: string;
  port: number;
  cluster: string;
  keyHex: string | undefined;
}

export function upAir(st: UpState): UpAir {
  let keyHex: string | undefined;
  if (st.air.keyFile && existsSync(st.air.keyFile)) keyHex = readFileSync(st.air.keyFile, 'utf8').trim();
  return { host: st.air.host ?? '127.0.0.1', port: st.air.port, cluster: st.cluster, keyHex };
}

/**
 * The relay control URL for the `air` verbs: --control, else $RETROKUBE_AIR_CONTROL, else the
 * running `up`'s relay. Never a guessed default: a relay at a well-known port may be a stranger's.
 */
export function airControlUrl(explicit: string | undefined, dir: string, env = process.env): string {
  if (explicit) return explicit;
  if (env.RETROKUBE_AIR_CONTROL) return env.RETROKUBE_AIR_CONTROL;
  const st = readUpState(dir);
  if (st?.air.control) return st.air.control;
  if (st)
    throw new Error(
      `the "retrokube up" in ${dir} uses an external relay (${st.air.host}:${st.air.port}) that it does not control; pass --control URL of that relay`,
    );
  throw new Error(
    `no running "retrokube up" found in ${dir} and no --control given: start one with "${cliName()} up" (or pass --state DIR), or name a relay you started with "${cliName()} air relay": --control http://127.0.0.1:7525`,
  );
}

/** The running `up`, or an error saying how to start one. */
export function requireUp(dir: string): UpState {
  const st = readUpState(dir);
  if (!st)
    throw new Error(
      `no running "retrokube up" found in ${dir} (start one with "${cliName()} up", or pass --state DIR)`,
    );
  return st;
}

/** Calls the running `up`'s control endpoint; errors carry its one-line reason. */
export async function upRequest(
  st: UpState,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(new URL(path, st.control), {
      method,
      headers: method === 'POST' ? { 'content-type': 'application/json' } : undefined,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(LIMITS.clientTimeoutMs),
    });
  } catch (e) {
    throw new Error(`"retrokube up" at ${st.control} does not answer (${(e as Error).message})`);
  }
  if (!res.ok) {
    const j = (await res.json().catch(() => ({}))) as { error?: string };
    throw new Error(j.error ?? `${method} ${path}: ${res.status} ${res.statusText}`);
  }
  return res;
}
