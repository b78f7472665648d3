// The disk builder: from the base image and Oberon sources, a bootable disk whose modules were
// compiled by the image's own compiler (ORP) running in our RISC5 machine. The sources go onto
// the disk with our file system; the machine boots, a command typed into a viewer and
// middle-clicked compiles each module, and a small helper module (RkBuild) hands the compiler's
// System.Log output back over the serial line. With the deterministic clock the same inputs give
// the same bytes.
import { logger } from '../../util/log.ts';
import { toOberonText } from '../fs/text.ts';
import { OberonVolume } from '../fs/volume.ts';
import { Machine } from '../machine.ts';
import { setUpNodeMachines } from '../node-setup.ts';
import { HELPER_FILE, HELPER_MODULE, HELPER_SOURCE, LOG_END } from './helper.ts';
import { type CompileMessage, type CompileOutcome, lineAndColumn, parseCompileLog } from './log.ts';
import { parseObjectFile } from './rsc.ts';

const log = logger('disk-builder');

export const LIMITS = {
  bootInstructions: 60_000_000, // the base image boots in about 8 M; far more means it is broken
  stepInstructions: 2_000_000_000, // one compile or log dump (the compiler compiling itself is 44 M)
  maxSources: 200, // sources in one build; the directory and the log stay small
  quietMs: 3000, // Oberon time idle without an answer that means no answer will come (a trap)
  collectInstructions: 100_000_000, // the collector runs within 1 s of Oberon time (idle time is skipped)
} as const;

export interface Source {
  /** Oberon file name, e.g. "Boot.Mod". */
  name: string;
  /** The text (LF or CR line ends; stored with CR as Oberon keeps texts). */
  text: string;
}

export interface BuildOptions {
  /** The base disk image bytes (not modified). */
  base: Buffer;
  /** Compiled in this order (imports first). */
  sources: Source[];
  /** Extra files copied onto the disk as they are (no compiling). */
  files?: { name: string; data: Uint8Array }[];
  /** Grow the result to this many bytes (e.g. 8 MiB so Oberon has room for new files). */
  growTo?: number;
}

export interface ModuleResult {
  file: string;
  module: string;
  key: number;
  codeBytes: number;
  log: string;
}

export interface BuildResult {
  disk: Buffer;
  modules: ModuleResult[];
  instructions: number;
}

export class CompileError extends Error {
  override name = 'CompileError';
  readonly file: string;
  readonly module: string | undefined;
  readonly messages: CompileMessage[];
  readonly log: string;
  constructor(file: string, outcome: CompileOutcome) {
    const where = outcome.messages
      .map((m) =>
        m.line ? `${file}:${m.line}:${m.column} (pos ${m.pos}): ${m.message}` : `${file}: ${m.message}`,
      )
      .join('\n  ');
    super(`${outcome.module ?? file} does not compile:\n  ${where}`);
    this.file = file;
    this.module = outcome.module;
    this.messages = outcome.messages;
    this.log = outcome.text;
  }
}

function moduleNameOf(source: string): string | undefined {
  return /^\s*(?:\(\*[\s\S]*?\*\)\s*)*MODULE\s+\*?\s*([A-Za-z][A-Za-z0-9]*)/.exec(source)?.[1];
}

/** A running machine plus what it has sent on the serial line. */
class Session {
  readonly machine: Machine;
  private serial: number[] = [];
  private collections = 0; // garbage collections Oberon has finished (LED 20H)
  constructor(disk: Buffer) {
    this.machine = new Machine({ disk, clock: 'deterministic' });
    this.machine.onSerial = (b) => this.serial.push(b);
    this.machine.onLeds = (v) => {
      if (v === 0x20) this.collections++;
    };
  }

  boot(): void {
    const m = this.machine;
    if (!m.runUntil(() => m.booted, { maxInstructions: LIMITS.bootInstructions })) {
      throw new Error(
        `the base image did not reach Oberon.Loop within ${LIMITS.bootInstructions} instructions`,
      );
    }
    if (!m.runUntilIdle(LIMITS.stepInstructions)) throw new Error('Oberon did not settle after booting');
  }

  /**
   * Runs until the helper has sent a complete log excerpt; undefined when Oberon went back to
   * its loop without one (the helper is not running, or a command trapped and aborted it).
   */
  nextExcerpt(): string | undefined {
    const m = this.machine;
    const start = m.cpu.instructions;
    let idleSince = -1;
    for (;;) {
      const end = this.serial.indexOf(LOG_END);
      if (end >= 0) {
        const text = Buffer.from(this.serial.slice(0, end)).toString('latin1');
        this.serial = this.serial.slice(end + 1);
        return text;
      }
      const r = m.run(200_000);
      if (r.idle && !m.inputPending) {
        // idle for a while of Oberon time with no excerpt: nothing is coming (the helper's task
        // runs on every pass of the loop, so a fed line would have been taken long ago)
        if (idleSince < 0) idleSince = m.timerMs();
        else if (m.timerMs() - idleSince > LIMITS.quietMs) return undefined;
      } else {
        idleSince = -1;
      }
      if (m.cpu.instructions - start > LIMITS.stepInstructions) {
        throw new Error(`no answer from the machine within ${LIMITS.stepInstructions} instructions`);
      }
    }
  }

  /** Starts RkBuild.Run; returns the log so far (which holds the helper's own compile). */
  startHelper(): string | undefined {
    this.machine.runCommand(`${HELPER_MODULE}.Run`);
    return this.nextExcerpt();
  }

  /** One command through the running helper; the log text it produced. */
  run(line: string): string {
    this.machine.serialFeed(`${line}\r`);
    const text = this.nextExcerpt();
    this.awaitCollection();
    if (text !== undefined) return text;
    // The command trapped (Oberon removed the helper's task): ask for the log with a typed command.
    this.command(`${HELPER_MODULE}.Log`);
    return this.nextExcerpt() ?? '';
  }

  /**
   * Lets Oberon's loop run until its garbage collector has run (LED 20H ends a collection; the
   * compiler asks for one when it is done). Oberon collects only from its loop, every second.
   */
  private awaitCollection(): void {
    const before = this.collections;
    this.machine.runUntil(() => this.collections > before, {
      maxInstructions: LIMITS.collectInstructions,
      slice: 100_000,
    });
  }

  /** Types a command at the end of the System.Tool text, middle-clicks it, waits until Oberon idles. */
  command(line: string): void {
    this.machine.runCommand(line);
    if (!this.machine.runUntilIdle(LIMITS.stepInstructions))
      throw new Error(`Oberon did not settle after ${line}`);
  }

  stopHelper(): void {
    this.machine.serialFeed('\r');
    this.nextExcerpt();
    if (!this.machine.runUntilIdle(LIMITS.stepInstructions)) throw new Error('the helper did not stop');
  }

  volume(): OberonVolume {
    return OberonVolume.fromBuffer(this.machine.disk.bytes);
  }
}

/** Builds the disk; throws CompileError with the compiler's messages when a source fails. */
export function buildDisk(opts: BuildOptions): BuildResult {
  // The builder's machine runs in the calling thread (the CLI, `retrokube up`, the lab server),
  // not in a machine thread (worker.ts): its compiles get the same hints and wasm tiering.
  setUpNodeMachines();
  if (opts.sources.length > LIMITS.maxSources) {
    throw new RangeError(`${opts.sources.length} sources; the builder takes at most ${LIMITS.maxSources}`);
  }
  const vol = OberonVolume.fromBuffer(opts.base);
  if (vol.kind !== 'filesystem')
    throw new Error('the builder needs a file-system image (.dsk starting with the directory mark)');
  const modules = new Map<string, string>(); // file → module name
  const texts = new Map<string, string>();
  for (const src of opts.sources) {
    if (!/\.Mod$/.test(src.name)) throw new Error(`${src.name}: sources must be named X.Mod`);
    if (src.name === HELPER_FILE)
      throw new Error(`${HELPER_FILE} is the builder's own helper; rename your module`);
    const module = moduleNameOf(src.text);
    if (!module) throw new Error(`${src.name}: no "MODULE Name;" at the start`);
    if (`${module}.Mod` !== src.name)
      throw new Error(`${src.name} holds module ${module}; name the file ${module}.Mod`);
    const text = toOberonText(Buffer.from(src.text, 'latin1'));
    vol.write(src.name, text);
    modules.set(src.name, module);
    texts.set(src.name, text.toString('latin1'));
  }
  for (const f of opts.files ?? []) vol.write(f.name, f.data);
  vol.write(HELPER_FILE, Buffer.from(HELPER_SOURCE, 'latin1'));
  // which object files exist before: a compile must replace them with a new header
  const before = new Map<string, number>();
  for (const module of modules.values()) before.set(module, vol.lookup(`${module}.rsc`));

  const session = new Session(vol.toBuffer());
  session.boot();
  session.command(`ORP.Compile ${HELPER_FILE}/s ~`);
  if (!session.volume().exists(`${HELPER_MODULE}.rsc`)) {
    throw new Error(
      `the builder's helper module ${HELPER_MODULE} did not compile; the machine cannot be driven`,
    );
  }
  const first = session.startHelper();
  if (first === undefined)
    throw new Error(`the helper ${HELPER_MODULE}.Run did not start (the middle-click missed it?)`);
  const helper = parseCompileLog(first.slice(first.lastIndexOf('compiling')), HELPER_FILE);
  if (!helper.ok) throw new CompileError(HELPER_FILE, helper);

  const results: ModuleResult[] = [];
  for (const src of opts.sources) {
    const text = session.run(`ORP.Compile ${src.name}/s ~`);
    const outcome = parseCompileLog(text, src.name);
    const source = texts.get(src.name) ?? '';
    for (const m of outcome.messages) if (m.pos > 0) Object.assign(m, lineAndColumn(source, m.pos));
    if (!outcome.ok || outcome.key === undefined) throw new CompileError(src.name, outcome);
    results.push({
      file: src.name,
      module: outcome.module ?? '',
      key: outcome.key,
      codeBytes: outcome.codeBytes ?? 0,
      log: text.trim(),
    });
    log.debug({ module: outcome.module, moduleKey: outcome.key.toString(16) }, 'compiled');
  }
  session.stopHelper();

  // Verify every object file: new, well-formed, and the module and key the compiler reported.
  const out = session.volume();
  for (const r of results) {
    const name = `${r.module}.rsc`;
    const adr = out.lookup(name);
    if (adr === 0) throw new Error(`${name} is missing after compiling ${r.file}`);
    if (adr === before.get(r.module)) throw new Error(`${name} was not rewritten by compiling ${r.file}`);
    const obj = parseObjectFile(out.read(name));
    if (obj.module !== r.module) throw new Error(`${name} holds module ${obj.module}, not ${r.module}`);
    if (obj.key !== r.key)
      throw new Error(`${name} has key ${obj.key.toString(16)}, the compiler logged ${r.key.toString(16)}`);
  }
  for (const ext of ['Mod', 'rsc', 'smb']) out.remove(`${HELPER_MODULE}.${ext}`);
  if (opts.growTo) out.grow(opts.growTo);
  const problems = out.check();
  if (problems.length > 0) throw new Error(`the built disk is inconsistent: ${problems.join('; ')}`);
  return { disk: out.toBuffer(), modules: results, instructions: session.machine.cpu.instructions };
}
