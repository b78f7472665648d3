// One RISC5 machine of the browser lab in a Web Worker: our emulator (machine/machine.ts, the
// same code `retrokube up` runs in Node worker threads) paced to 25 MHz of wall-clock time (no
// time-scale trick: Oberon's millisecond timer is the page's clock), sleeping while Oberon idles
// and woken by input or a radio frame. The disk lives in the worker's memory: switching the
// machine off and on keeps what was written, as a real disk does.
import { LIMITS as MACHINE, Machine } from '../../machine/machine.ts';
import { KeyTranslator } from '../../machine/rfb/keysyms.ts';
import type { FromLabWorker, ToLabWorker } from './worker-protocol.ts';

export const LIMITS = {
  chunk: 250_000, // instructions per CPU call (10 ms of machine time) between clock checks
  sliceHostMs: 12, // longest stretch of emulation before the worker reads its messages
  maxCreditMs: 40, // a machine that fell behind catches up at most this much at once
  idleSleepMs: 16, // sleep while Oberon idles (woken early by input or radio): one 60-Hz frame
  frameMinMs: 100, // at most 10 screen frames per second go to the page
  statsMs: 1000, // instruction counts go to the page this often
} as const;

const scope = self as unknown as {
  postMessage(m: FromLabWorker, transfer?: Transferable[]): void;
  onmessage: ((e: MessageEvent<ToLabWorker>) => void) | null;
};
const post = (m: FromLabWorker, transfer: Transferable[] = []): void => scope.postMessage(m, transfer);

let machine: Machine | null = null;
let on = false;
let timer: ReturnType<typeof setTimeout> | null = null;
let credit = 0;
let last = performance.now();
let lastFrameAt = 0;
let lastFrameVersion = -1;
let bootedSent = false;
let statsAt = performance.now();
let statsInstr = 0;
let statsBusyMs = 0;
const keys = new KeyTranslator();

function schedule(ms: number): void {
  if (!on || timer !== null) return;
  timer = setTimeout(slice, ms);
}

function wake(): void {
  if (timer !== null) {
    clearTimeout(timer);
    timer = null;
  }
  schedule(0);
}

function slice(): void {
  timer = null;
  const m = machine;
  if (!on || !m) return;
  const now = performance.now();
  credit = m.booted
    ? Math.min(credit + (now - last) * MACHINE.instrPerMs, LIMITS.maxCreditMs * MACHINE.instrPerMs)
    : MACHINE.instrPerMs * LIMITS.sliceHostMs * 10; // boot flat out: nobody wants to wait for it
  last = now;
  const deadline = now + LIMITS.sliceHostMs;
  let idle = false;
  while (credit > 0) {
    const r = m.run(Math.min(credit, LIMITS.chunk));
    credit -= r.executed;
    statsInstr += r.executed;
    if (r.idle) {
      idle = true;
      break;
    }
    if (performance.now() >= deadline) break;
  }
  statsBusyMs += performance.now() - now;
  publish(m);
  if (idle) {
    credit = 0;
    schedule(LIMITS.idleSleepMs);
  } else schedule(credit <= 0 ? Math.max(1, Math.ceil(-credit / MACHINE.instrPerMs)) : 0);
}

function publish(m: Machine): void {
  const now = performance.now();
  if (!bootedSent && m.booted) {
    bootedSent = true;
    post({ t: 'booted' });
  }
  if (m.cpu.fbVersion !== lastFrameVersion && now - lastFrameAt >= LIMITS.frameMinMs) {
    lastFrameAt = now;
    const snap = m.snapshot();
    lastFrameVersion = snap.version;
    post({ t: 'frame', words: snap.words, width: snap.width, height: snap.height }, [snap.words.buffer]);
  }
  if (now - statsAt >= LIMITS.statsMs) {
    post({ t: 'stats', instructions: statsInstr, ms: now - statsAt, busyMs: statsBusyMs });
    statsAt = now;
    statsInstr = 0;
    statsBusyMs = 0;
  }
}

/** Flat out for `ms`: the emulator's own speed in this browser, without the 25-MHz pacing. */
function bench(ms: number): number {
  const m = machine;
  if (!m) return 0;
  const start = performance.now();
  let n = 0;
  while (performance.now() - start < ms) n += m.run(LIMITS.chunk).executed;
  return (n / (performance.now() - start)) * 1000;
}

scope.onmessage = (e) => {
  const msg = e.data;
  try {
    switch (msg.t) {
      case 'init':
        machine = new Machine({
          disk: Buffer.from(msg.disk),
          clock: 'realtime',
          commands: msg.commands,
          air: {
            send: (channel, payload) => post({ t: 'radio', channel, payload: Uint8Array.from(payload) }),
          },
        });
        on = true;
        last = performance.now();
        schedule(0);
        return;
      case 'power':
        if (!machine) return;
        if (msg.on && !on) {
          machine.powerOn();
          bootedSent = false;
          lastFrameVersion = -1;
          on = true;
          last = performance.now();
          credit = 0;
        } else if (!msg.on) {
          on = false;
          if (timer !== null) clearTimeout(timer);
          timer = null;
        }
        break;
      case 'radio':
        if (on) machine?.radio.receive(msg.channel, msg.payload);
        break;
      case 'serial':
        machine?.serialFeed(msg.text);
        break;
      case 'command':
        machine?.runCommand(msg.text);
        break;
      case 'key': {
        const bytes = keys.translate(msg.keysym, msg.down);
        if (bytes) machine?.ps2(bytes);
        break;
      }
      case 'pointer':
        if (machine) {
          const y = machine.height - 1 - Math.min(msg.y, machine.height - 1);
          machine.mouse(msg.x, y, {
            left: (msg.mask & 1) !== 0,
            middle: (msg.mask & 2) !== 0,
            right: (msg.mask & 4) !== 0,
          });
        }
        break;
      case 'bench':
        post({ t: 'bench', perSecond: bench(msg.ms) });
        break;
    }
    wake();
  } catch (err) {
    post({ t: 'error', message: (err as Error).message });
  }
};
