// QemuRunner: a RISC5 machine as a qemu-system-risc5 process (our QEMU target and oberon board,
// qemu/), the same machine shape as MachineRunner for the parts a Kube cluster needs: a disk,
// boot commands on RS-232, the radio on a UDP air, a serial line for more commands, power off.
//
//   const m = await QemuRunner.start({ qemu: '/path/qemu-system-risc5', disk: 'node.dsk',
//                                      commands: 'KubeNet.Join n1 kube 00c0ffee',
//                                      air: { host: '127.0.0.1', port: 7524 } });
//   m.serialFeed('Kube.Ensure web 4 Ticker;');
//   await m.stop();                         // power off: the process ends at once
//
// The disk is used in place (QEMU writes it as Oberon does); the boot ROM is ours (boot-rom.ts).

import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bootRom } from './boot-rom.ts';
import { endCommands } from './machine.ts';
import type { RunnerOptions } from './runner.ts';

export const LIMITS = {
  memLim: 0xe7ef0, // the board's MemLim (display start − 16), what the boot ROM stores at 12
  stackOrg: 0x80000, // the board's stack origin (BootLoad stores it at 24)
  commandsMax: 240, // the boot-command limit of the hook and chart (printable ASCII)
  serialConnectMs: 10_000, // QEMU creates its serial socket within a second even when starved
  outputKeep: 64 << 10, // bytes of QEMU's own stderr kept for error messages
  radioLogPollMs: 50, // how often the radio log is read (each record carries QEMU's own time)
  radioLogRecord: 41, // bytes per record of the board's radio-log: ms (8, little-endian), channel, 32 bytes
} as const;

/** The boot ROM image (at most 2 KiB) QEMU's `-bios` loads: ours (boot-rom.ts) with the board's MemLim and stack. */
export function romBytes(): Buffer {
  const rom = bootRom(LIMITS.memLim, LIMITS.stackOrg);
  return Buffer.from(rom.buffer, rom.byteOffset, rom.byteLength);
}

export interface QemuRunnerOptions {
  /** Path of qemu-system-risc5 (qemu/build.sh --print-path). */
  qemu: string;
  /** The .dsk file, used in place. */
  disk: string;
  /** Text fed to RS-232 receive from power-on; commas are doubled for -machine here. */
  commands?: string;
  /** The air relay; the machine's UDP socket is connected to it. */
  air?: { host: string; port: number; localPort?: number };
  /**
   * Every frame Oberon reads from the radio, as it reads it (QEMU's wall-clock ms, as Date.now()):
   * what this machine heard, and when, as RunnerOptions.onRadioFrame for an emulated machine. Read
   * from the board's radio-log file every LIMITS.radioLogPollMs: for tests.
   */
  onRadioFrame?: RunnerOptions['onRadioFrame'];
}

/** -machine property syntax: a comma ends the value, so commas inside it are doubled. */
export function machineProperty(value: string): string {
  return value.replaceAll(',', ',,');
}

export class QemuRunner {
  private readonly proc: ChildProcess;
  private readonly dir: string;
  private serial: Socket | null = null;
  private output = '';
  private radioLog: { poll: () => void; timer: NodeJS.Timeout; close: () => void } | null = null;
  readonly exited: Promise<number | null>;

  private constructor(proc: ChildProcess, dir: string) {
    this.proc = proc;
    this.dir = dir;
    const keep = (d: Buffer) => {
      this.output = (this.output + d.toString('utf8')).slice(-LIMITS.outputKeep);
    };
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    this.exited = new Promise((ok) => proc.once('exit', (code) => ok(code)));
  }

  static async start(opts: QemuRunnerOptions): Promise<QemuRunner> {
    const commands = opts.commands ?? '';
    if (commands.length > LIMITS.commandsMax || !/^[ -~]*$/.test(commands))
      throw new Error(
        `boot commands must be at most ${LIMITS.commandsMax} printable ASCII characters (got ${commands.length})`,
      );
    const dir = mkdtempSync(join(tmpdir(), 'retrokube-qemu-run-'));
    const prom = join(dir, 'prom.bin');
    writeFileSync(prom, romBytes());
    const serialPath = join(dir, 'serial.sock');
    const machine = ['oberon'];
    // Ended as the emulator ends them: a command typed later must not join the last boot line.
    if (commands) machine.push(`commands=${machineProperty(endCommands(commands))}`);
    const args = ['-bios', prom, '-drive', `if=none,id=sd0,file=${opts.disk},format=raw`];
    if (opts.air) {
      machine.push('radio=air');
      const local = opts.air.host.startsWith('127.') ? '127.0.0.1' : '0.0.0.0';
      args.push(
        '-chardev',
        `udp,id=air,host=${opts.air.host},port=${opts.air.port},localaddr=${local},localport=${opts.air.localPort ?? 0}`,
      );
    }
    const radioLog = join(dir, 'radio.log');
    if (opts.onRadioFrame) machine.push(`radio-log=${machineProperty(radioLog)}`);
    args.push('-chardev', `socket,id=ser,path=${serialPath},server=on,wait=off`, '-serial', 'chardev:ser');
    args.push('-display', 'none', '-monitor', 'none');
    const proc = spawn(opts.qemu, ['-M', machine.join(','), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const m = new QemuRunner(proc, dir);
    if (opts.onRadioFrame) m.followRadioLog(radioLog, opts.onRadioFrame);
    try {
      m.serial = await m.connectSerial(serialPath);
    } catch (e) {
      await m.stop();
      throw new Error(`qemu-system-risc5 did not start: ${m.output.trim() || (e as Error).message}`);
    }
    return m;
  }

  private async connectSerial(path: string): Promise<Socket> {
    const deadline = Date.now() + LIMITS.serialConnectMs;
    for (;;) {
      if (this.proc.exitCode !== null) throw new Error(`exited with ${this.proc.exitCode}`);
      try {
        return await new Promise<Socket>((ok, fail) => {
          const s = createConnection(path, () => ok(s));
          s.once('error', fail);
        });
      } catch (e) {
        if (Date.now() > deadline) throw e;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  /** Reads the radio log's new records now and then (QEMU creates the file as the machine starts). */
  private followRadioLog(path: string, onFrame: NonNullable<QemuRunnerOptions['onRadioFrame']>): void {
    const size = LIMITS.radioLogRecord;
    const chunk = Buffer.alloc(size * 1024);
    let fd: number | null = null;
    let offset = 0;
    const poll = () => {
      if (fd === null) {
        try {
          fd = openSync(path, 'r');
        } catch {
          return; // not created yet
        }
      }
      for (;;) {
        const n = readSync(fd, chunk, 0, chunk.length, offset);
        const whole = n - (n % size); // a record half written yet is read again next time
        for (let at = 0; at < whole; at += size)
          onFrame(
            Number(chunk.readBigUInt64LE(at)),
            chunk[at + 8],
            new Uint8Array(chunk.subarray(at + 9, at + size)),
          );
        offset += whole;
        if (n < chunk.length) return;
      }
    };
    const close = () => {
      if (fd !== null) closeSync(fd);
      fd = null;
    };
    this.radioLog = { poll, timer: setInterval(poll, LIMITS.radioLogPollMs), close };
  }

  /** Bytes for RS-232 receive (Boot's task runs them as commands). */
  serialFeed(data: string): void {
    this.serial?.write(Buffer.from(data, 'latin1'));
  }

  /** QEMU's own messages (errors at start, guest errors). */
  messages(): string {
    return this.output;
  }

  /** Power off: the process ends at once, as pulling the plug; the disk keeps what was written. */
  async stop(): Promise<void> {
    this.serial?.destroy();
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGKILL');
    await this.exited;
    if (this.radioLog) {
      clearInterval(this.radioLog.timer);
      this.radioLog.poll(); // what it read before the plug was pulled
      this.radioLog.close();
      this.radioLog = null;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
