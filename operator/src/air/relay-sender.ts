// The relay's send thread (a worker, `startRelay({ sendThread: true })`): under a flood nearly all
// of the relay's CPU is one send system call per delivery, and Node cannot batch them (no
// sendmmsg), so a second thread makes part of them on the host's other core. Its socket is bound
// to the relay's own address and port (SO_REUSEPORT): stations connect() their socket to the relay
// (the QEMU chardev does), so a delivery from any other port would never reach them.
// The kernel spreads incoming datagrams over both sockets by the sender's address; what reaches
// this one is handed to the relay's thread, which alone keeps the station table and the limits.
import dgram from 'node:dgram';
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { RELAY_LIMITS } from './relay-limits.ts';
import { literalLookup } from './relay-lookup.ts';
import { CTL, ip4Number, ip4Text, JobReader, openRings, pushInbound } from './relay-rings.ts';

/** What the relay passes to its send thread. */
export interface SenderData {
  sab: SharedArrayBuffer;
  port: number;
  bind: string;
}

/** Jobs sent between two turns of this thread's event loop (where its socket's own work runs). */
const JOBS_PER_TURN = 32;

const { sab, port, bind } = workerData as SenderData;
const rings = openRings(sab);
const ctl = rings.ctl;
let sent = 0;
let late = 0;
let sendErrors = 0;
let inboundDropped = 0;

const socket = dgram.createSocket({ type: 'udp4', reusePort: true, lookup: literalLookup });
socket.on('error', () => {
  sendErrors++;
  Atomics.store(ctl, CTL.SEND_ERRORS, sendErrors | 0);
});
socket.on('message', (msg, rinfo) => {
  if (!pushInbound(rings, msg, ip4Number(rinfo.address), rinfo.port)) {
    inboundDropped++;
    Atomics.store(ctl, CTL.INBOUND_DROPPED, inboundDropped | 0);
  }
});
await new Promise<void>((resolve, reject) => {
  socket.once('error', reject);
  socket.bind(port, bind, () => {
    socket.off('error', reject);
    resolve();
  });
});
parentPort?.postMessage({ type: 'ready' });
// asked by benchmarks only, to count this thread's CPU with the relay's
parentPort?.on('message', () => {
  const u = process.threadCpuUsage();
  parentPort?.postMessage({ cpuUs: u.user + u.system });
});

// Host strings by address: dgram takes a string, and one string per station beats one per send.
const hosts = new Map<number, string>();
const hostOf = (ip: number): string => {
  let h = hosts.get(ip);
  if (h === undefined) {
    if (hosts.size >= RELAY_LIMITS.MAX_PEERS) hosts.clear();
    h = ip4Text(ip);
    hosts.set(ip, h);
  }
  return h;
};

// how busy this thread is, for the relay to share the sends out (relay-thread.ts balance)
const busy = setInterval(
  () => Atomics.store(ctl, CTL.BUSY_MS, Math.round(performance.eventLoopUtilization().active) | 0),
  RELAY_LIMITS.QUEUE_MEASURE_MS / 25,
);
let queueFrames = 0;
const jobs = new JobReader(rings);
while (!Atomics.load(ctl, CTL.CLOSING)) {
  const q = Atomics.load(ctl, CTL.QUEUE_FRAMES);
  if (q !== queueFrames && q > 0) {
    queueFrames = q;
    socket.setRecvBufferSize(Math.ceil((q * RELAY_LIMITS.DATAGRAM_TRUESIZE) / 2));
  }
  let n = 0;
  for (; n < JOBS_PER_TURN && jobs.pending() > 0; n++) {
    const job = jobs.next();
    // as the relay: a kernel that still holds earlier sends means a drop, not a queue
    if (socket.getSendQueueCount() > 0) {
      late += job.count;
    } else {
      // a copy: a send the kernel cannot take at once completes later, after the slot is reused
      const frame = Buffer.from(job.frame);
      for (let k = 0; k < job.count; k++) {
        socket.send(frame, job.port(k), hostOf(job.ip(k)));
        sent++;
      }
    }
    jobs.done();
  }
  Atomics.store(ctl, CTL.SENT, sent | 0);
  Atomics.store(ctl, CTL.LATE, late | 0);
  // let the loop run (send completions, datagrams on this socket) before more jobs, or sleep
  if (n === JOBS_PER_TURN) await new Promise((r) => setImmediate(r));
  else await jobs.wait();
}
clearInterval(busy);
socket.close();
