// A machine in a worker thread: owns the Machine, the disk file (write-through) and the UDP
// air socket, paces the CPU to 25 MHz of wall-clock time and sleeps while Oberon idles
// (woken early by input or a radio frame). Driven by messages (protocol.ts).
//
// A thread hosts one machine (workerData is its WorkerInit; messages on the parent port), or,
// as a shared machine thread (workerData { shared: true }), any number of them: each arrives as
// a 'host' message with its WorkerInit and a MessagePort of its own that carries the same
// protocol. The machines of a cluster share a thread so that starting one costs a boot-image
// restore instead of a whole Node thread, and translated code (jit.ts) is shared between them.

import fs from 'node:fs';
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import type { UdpAir } from './air-udp.ts';
import type { BootImage } from './boot-image.ts';
import { saveAllHints } from './jit-hints.ts';
import { LIMITS as MACHINE_LIMITS, Machine } from './machine.ts';
import { setUpNodeMachines } from './node-setup.ts';
import type { FromWorker, HostMessage, MachineState, ToWorker, WorkerInit } from './protocol.ts';
import { imageId } from './protocol.ts';

export const LIMITS = {
  chunk: 250_000, // instructions per CPU call (10 ms of machine time) between host checks
  sliceHostMs: 12, // longest stretch of host time spent emulating before yielding to messages
  maxCreditMs: 40, // catch-up horizon: a machine that fell behind does not sprint longer than this
  idleSleepMs: 16, // sleep while Oberon idles (woken early by input/radio): one 60 Hz frame, as the reference
  idleSleepMaxMs: 64, // ...doubled after quiet frames up to this: a thread wake-up costs ~0.2 ms of host CPU on a VM, ten times the idle frame itself; Oberon's tasks may then run up to 64 ms late (its clock stays right)
  idleSleepLongMs: 1000, // longest sleep until Oberon's next task is due (a bogus due time costs at most this)
  quietFrameInstructions: 5_000, // an idle frame that ran at most this (Oberon.Loop alone: ~800) and drew nothing is quiet
  quietTaskFrameInstructions: 200_000, // ...or, when Oberon's task ring is known, at most this (its periodic tasks run on their deadlines, not on the beat)
  quietFramesToBackOff: 4, // quiet frames in a row before the sleep doubles
  frameMinMs: 40, // at most 25 pushed screen frames per second
  radioDrainMaxMs: 16, // with received frames unread, sleep at most this (or until Oberon's next task)
  radioWakeMs: 25, // a radio frame wakes a sleeping machine within this: frames of one burst share a wake (40 ms cost converge time, 15 ms CPU; bench/kube) (the radio's host queue keeps them 250 ms)
} as const;

const threadPort = parentPort;
if (threadPort === null) throw new Error('worker.ts must run as a worker thread');
// Every machine of `retrokube machine run` and of the local cluster (`retrokube up`) runs in a
// thread like this one: its CPUs get the translator's stored hints, and V8's wasm tiering is tuned
// before the first block is translated (cpu.ts itself stays free of Node: the browser lab runs it).
setUpNodeMachines();
const data = workerData as WorkerInit | { shared: true };
if ('shared' in data) {
  /** Boot images sent to this thread, each once (HostMessage). */
  const images = new Map<string, BootImage>();
  threadPort.on('message', (msg: HostMessage) => {
    try {
      for (const b of msg.images) images.set(imageId(b), b);
      const own = msg.imageIds?.flatMap((id) => images.get(id) ?? []);
      hostMachine(msg.port, { ...msg.init, bootImages: own }, true);
    } catch (err) {
      // This machine could not start (e.g. its disk): the thread's other machines go on.
      msg.port.postMessage({ t: 'error', message: (err as Error).message } satisfies FromWorker);
      msg.port.close();
    }
  });
} else hostMachine(threadPort, data, false);

/** CPU time of this thread so far, in ms. */
function threadCpuMs(): number {
  const u = process.threadCpuUsage();
  return (u.user + u.system) / 1000;
}

/**
 * Runs one machine driven by the messages on port. In a shared thread (shared) a failure stops
 * this machine only, and the CPU it reports is the time spent on it, not the thread's.
 */
function hostMachine(port: MessagePort, init: WorkerInit, shared: boolean): void {
  function post(msg: FromWorker, transfer?: ArrayBuffer[]): void {
    port.postMessage(msg, transfer ?? []);
  }
  /** Host CPU spent on this machine (shared threads only): from here, its start included. */
  const startCpuMs = shared ? threadCpuMs() : 0;
  let ownCpuMs = 0;
  /** Runs fn, adding its CPU time to this machine's in a shared thread; a failure stops this machine there. */
  function accounted(fn: () => void): void {
    if (!shared) {
      fn();
      return;
    }
    const c0 = threadCpuMs();
    try {
      fn();
    } catch (err) {
      running = false;
      post({ t: 'error', message: (err as Error).message });
    } finally {
      ownCpuMs += threadCpuMs() - c0;
    }
  }

  const fd = fs.openSync(init.diskPath, 'r+');
  const machine = new Machine({
    disk: fs.readFileSync(init.diskPath),
    clock: init.clock,
    memoryMiB: init.memoryMiB,
    width: init.width,
    height: init.height,
    commands: init.commands,
    switches: init.switches,
    jit: init.jit,
    boot: init.boot,
    bootImages: init.bootImages,
  });
  machine.disk.onWrite = (offset, data) => {
    fs.writeSync(fd, data, 0, data.length, offset);
  };

  let serialBuf: number[] = [];
  machine.onSerial = (b) => {
    serialBuf.push(b);
  };
  let ledsChanged = machine.restored; // a restored boot has LEDs set already
  machine.onLeds = () => {
    ledsChanged = true;
  };
  machine.onClipboard = (text) => post({ t: 'clipboard', text });
  if (init.radioTrace)
    machine.radio.onRead = (channel, payload) =>
      post({ t: 'radio', at: Date.now(), channel, payload: payload.slice() });

  let air: UdpAir | null = null;
  let running = true;
  let frames = init.frames;
  let lastFrameVersion = -1;
  let lastFrameAt = 0;
  let bootedSent = false;
  let lastIdle = false;
  let timer: NodeJS.Timeout | null = null;
  let timerDue = 0; // performance.now() at which `timer` fires
  let immediate: NodeJS.Immediate | null = null;
  let credit = 0;
  let last = performance.now();
  let idleSleep: number = LIMITS.idleSleepMs;
  let quietFrames = 0;
  let wokenEarly = false;
  const virtualStart = performance.now();

  function schedule(ms: number): void {
    if (!running || timer !== null || immediate !== null) return;
    if (ms <= 0) immediate = setImmediate(runSlice);
    else {
      timer = setTimeout(runSlice, ms);
      timerDue = performance.now() + ms;
    }
  }

  /** A radio frame arrived: run within LIMITS.radioWakeMs (sooner if already due sooner). */
  function wakeForFrame(): void {
    if (timer === null || timerDue - performance.now() <= LIMITS.radioWakeMs) return;
    wokenEarly = true;
    clearTimeout(timer);
    timer = null;
    schedule(LIMITS.radioWakeMs);
  }

  /** Input or a radio frame arrived: run now instead of finishing the idle sleep. */
  function wake(): void {
    wokenEarly = true;
    if (timer !== null) {
      clearTimeout(timer);
      timer = null;
    }
    schedule(0);
  }

  function runSlice(): void {
    accounted(slice);
  }

  function slice(): void {
    timer = null;
    immediate = null;
    if (!running) return;
    const now = performance.now();
    let idle = false;
    if (init.clock === 'deterministic' && init.fast) {
      credit = MACHINE_LIMITS.instrPerMs * LIMITS.sliceHostMs * 10;
    } else if (init.clock === 'deterministic') {
      // Virtual time may not run ahead of the wall clock.
      credit = (now - virtualStart) * MACHINE_LIMITS.instrPerMs - machine.cycles;
    } else if (!machine.booted) {
      // Boot flat out: the timer follows the wall clock anyway, and nobody wants to wait 0.3 s.
      credit = MACHINE_LIMITS.instrPerMs * LIMITS.sliceHostMs * 10;
    } else {
      credit = Math.min(
        credit + (now - last) * MACHINE_LIMITS.instrPerMs,
        LIMITS.maxCreditMs * MACHINE_LIMITS.instrPerMs,
      );
    }
    last = now;
    const deadline = now + LIMITS.sliceHostMs;
    const fbBefore = machine.cpu.fbVersion;
    const woken = wokenEarly;
    wokenEarly = false;
    let executed = 0;
    while (credit > 0) {
      const r = machine.run(Math.min(credit, LIMITS.chunk));
      credit -= r.executed;
      executed += r.executed;
      if (r.idle) {
        idle = true;
        if (init.clock === 'deterministic')
          credit = (performance.now() - virtualStart) * MACHINE_LIMITS.instrPerMs - machine.cycles;
        if (!(init.clock === 'deterministic' && init.fast)) break;
      }
      if (performance.now() >= deadline) break;
    }
    lastIdle = idle;
    publish();
    if (idle && init.clock === 'realtime') {
      credit = 0;
      // Back off while nothing happens; anything at all (input, a frame, a task that ran, a picture)
      // brings the 60 Hz frame back.
      // With Oberon's task ring known, a frame in which only periodic tasks ran is quiet too: they
      // are served at their due times below (Kube's 10-ms radio poll and 50-ms controllers would
      // otherwise hold the beat at 16 ms forever, ~60 wake-ups a second per node).
      const dueKnown = machine.nextTaskDueMs() !== null;
      const limit = dueKnown ? LIMITS.quietTaskFrameInstructions : LIMITS.quietFrameInstructions;
      const quiet = !woken && executed <= limit && machine.cpu.fbVersion === fbBefore;
      if (!quiet) {
        idleSleep = LIMITS.idleSleepMs;
        quietFrames = 0;
      } else if (++quietFrames >= LIMITS.quietFramesToBackOff) {
        idleSleep = Math.min(idleSleep * 2, LIMITS.idleSleepMaxMs);
        quietFrames = 0;
      }
      // Nothing can happen before Oberon's next task is due, unless input or a radio frame wakes
      // us: sleep until then when that is longer than the beat (a task due sooner still waits for
      // the beat, as before: a 10-ms radio poll need not run while no frame arrives).
      const due = machine.nextTaskDueMs();
      const untilDue = due === null ? 0 : Math.min(due - machine.timerMs(), LIMITS.idleSleepLongMs);
      // Received frames Oberon has not read yet (the chip holds 3; a burst waits in the host
      // queue for at most 250 ms): wake when its radio task is due, not after the idle beat.
      if (machine.radio.framesWaiting && machine.radio.listening)
        schedule(Math.max(1, Math.min(untilDue, LIMITS.radioDrainMaxMs)));
      else schedule(Math.max(idleSleep, untilDue));
    } else if (credit <= 0) schedule(Math.max(1, Math.ceil(-credit / MACHINE_LIMITS.instrPerMs)));
    else schedule(0);
  }

  function publish(): void {
    if (serialBuf.length > 0) {
      const bytes = Uint8Array.from(serialBuf);
      serialBuf = [];
      post({ t: 'serial', bytes }, [bytes.buffer as ArrayBuffer]);
    }
    if (ledsChanged) {
      ledsChanged = false;
      post({ t: 'leds', value: machine.leds });
    }
    const image = machine.bootImage;
    if (image !== null) {
      machine.bootImage = null; // sent once, to the runner's cache
      post({ t: 'bootImage', image }, [
        image.ram.buffer as ArrayBuffer,
        image.readData.buffer as ArrayBuffer,
      ]);
    }
    if (!bootedSent && machine.booted) {
      bootedSent = true;
      post({ t: 'booted' });
    }
    if (frames) {
      const now = performance.now();
      if (machine.cpu.fbVersion !== lastFrameVersion && now - lastFrameAt >= LIMITS.frameMinMs) {
        lastFrameAt = now;
        const snap = machine.snapshot();
        lastFrameVersion = snap.version;
        post({ t: 'frame', snap }, [snap.words.buffer as ArrayBuffer]);
      }
    }
  }

  function state(): MachineState {
    const s = machine.stats();
    return {
      booted: machine.booted,
      idle: lastIdle && !machine.inputPending,
      inputPending: machine.inputPending,
      instructions: s.instructions,
      timerMs: s.timerMs,
      leds: s.leds,
      diskWrites: s.diskWrites,
      radio: s.radio,
      air:
        air === null
          ? null
          : {
              ...air.stats,
              localPort: air.localPort,
              unresolvedSince: air.unresolvedSince,
              resolveError: air.resolveError,
            },
      cpuMs: shared ? ownCpuMs : threadCpuMs(),
      voidFetches: s.voidFetches,
      restored: machine.restored,
    };
  }

  function handle(msg: ToWorker): void {
    switch (msg.t) {
      case 'typeText':
        machine.typeText(msg.text);
        break;
      case 'ps2':
        machine.ps2(msg.bytes);
        break;
      case 'mouse':
        machine.mouse(msg.x, msg.y, msg.buttons);
        break;
      case 'click':
        machine.click(msg.x, msg.y, msg.button, msg.holdMs);
        break;
      case 'move':
        machine.moveMouse(msg.x, msg.y, msg.buttons);
        break;
      case 'runCommand':
        machine.runCommand(msg.command);
        break;
      case 'pause':
        machine.pause(msg.ms);
        break;
      case 'serialIn':
        machine.serialFeed(msg.data);
        break;
      case 'clipboard':
        machine.clipboardIn = msg.text;
        break;
      case 'frames':
        frames = msg.on;
        lastFrameVersion = -1;
        break;
      case 'query':
        post({ t: 'state', id: msg.id, state: state() });
        return;
      case 'snapshot': {
        const snap = machine.snapshot();
        post({ t: 'snapshot', id: msg.id, snap }, [snap.words.buffer as ArrayBuffer]);
        return;
      }
      case 'powerCycle':
        machine.powerOn();
        bootedSent = false;
        break;
      case 'reset':
        machine.reset();
        break;
      case 'stop':
        running = false;
        if (timer !== null) clearTimeout(timer);
        if (immediate !== null) clearImmediate(immediate);
        publish();
        air?.close();
        fs.fsyncSync(fd);
        fs.closeSync(fd);
        saveAllHints(); // what the translator learned, for the next process (the thread may be terminated)
        post({ t: 'stopped', id: msg.id });
        port.close();
        return;
    }
    wake();
  }

  port.on('message', (msg: ToWorker) =>
    accounted(() => {
      try {
        handle(msg);
      } catch (err) {
        post({ t: 'error', message: (err as Error).message });
      }
    }),
  );

  async function main(): Promise<void> {
    if (init.air !== undefined) {
      // Loaded only for machines on an air: a machine without one starts faster.
      const { UdpAir } = await import('./air-udp.ts');
      air = new UdpAir({
        host: init.air.host,
        port: init.air.port,
        localPort: init.air.localPort,
        onFrame: (ch, payload) => {
          machine.radio.receive(ch, payload);
          wakeForFrame();
        },
      });
      await air.start();
      machine.radio.air = air;
    }
    post({ t: 'ready', airPort: air?.localPort ?? null });
    schedule(0);
  }

  if (shared) ownCpuMs += threadCpuMs() - startCpuMs;
  main().catch((err: Error) => post({ t: 'error', message: err.message }));
}
