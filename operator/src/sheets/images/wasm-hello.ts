// Tiny WASI (preview1) modules assembled byte by byte, so nothing needs a WebAssembly toolchain:
//   helloWasm  — writes a message to stdout and ends (optionally with an exit code): the sample
//                "hello" image of a new cluster, a workload that runs to completion;
//   tickerWasm — writes a line every few seconds and never ends: the long-running sample "ticker".
// Both are what the tests run too.

function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

function sleb(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    const done = (n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0);
    out.push(done ? b : b | 0x80);
    if (done) return out;
  }
}

const str = (s: string): number[] => {
  const b = [...Buffer.from(s, 'utf8')];
  return [...uleb(b.length), ...b];
};
const section = (id: number, body: number[]): number[] => [id, ...uleb(body.length), ...body];
const vec = (items: number[][]): number[] => [...uleb(items.length), ...items.flat()];

const I32 = 0x7f;
const op = {
  i32const: (n: number) => [0x41, ...sleb(n)],
  i32store: [0x36, 0x02, 0x00], // align 4, offset 0
  call: (f: number) => [0x10, ...uleb(f)],
  drop: [0x1a],
  loop: [0x03, 0x40], // a loop with no result
  end: [0x0b],
  br: (depth: number) => [0x0c, ...uleb(depth)],
  brIf: (depth: number) => [0x0d, ...uleb(depth)],
  localSet: (i: number) => [0x21, ...uleb(i)],
  localTee: (i: number) => [0x22, ...uleb(i)],
  localGet: (i: number) => [0x20, ...uleb(i)],
  i32sub: [0x6b],
};

// Every WASI import used here has the shape (i32, i32, i32, i32) -> i32 except proc_exit (i32) -> ().
const TYPE_FOUR_I32 = 0;
const TYPE_PROC_EXIT = 1;
const TYPE_START = 2;
const TYPES = vec([
  [0x60, ...vec([[I32], [I32], [I32], [I32]]), ...vec([[I32]])],
  [0x60, ...vec([[I32]]), 0x00],
  [0x60, 0x00, 0x00],
]);

/** One-function WASI module: the imports (in order), `_start`'s i32 locals and body, one data segment. */
function wasiModule(o: {
  imports: { name: string; type: number }[];
  locals: number;
  body: number[];
  dataAt: number;
  data: number[];
}): Uint8Array {
  const imports = vec(o.imports.map((i) => [...str('wasi_snapshot_preview1'), ...str(i.name), 0x00, i.type]));
  const start = o.imports.length; // function index of _start: after the imports
  const locals = o.locals > 0 ? vec([[...uleb(o.locals), I32]]) : [0x00];
  const code = [...locals, ...o.body, ...op.end];
  return Uint8Array.from([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, TYPES),
    ...section(2, imports),
    ...section(3, vec([[TYPE_START]])),
    ...section(5, vec([[0x00, 0x01]])), // one memory of one page
    ...section(
      7,
      vec([
        [...str('memory'), 0x02, 0x00],
        [...str('_start'), 0x00, ...uleb(start)],
      ]),
    ),
    ...section(10, vec([[...uleb(code.length), ...code]])),
    ...section(11, vec([[0x00, ...op.i32const(o.dataAt), ...op.end, ...uleb(o.data.length), ...o.data]])),
  ]);
}

// Memory layout shared by both modules: the iovec at 0 (buf, len), fd_write's count at 8.
const IOVEC = 0;
const NWRITTEN = 8;

/** Point the iovec at `len` bytes at `at`. */
const setIovec = (at: number, len: number): number[] => [
  ...op.i32const(IOVEC),
  ...op.i32const(at),
  ...op.i32store,
  ...op.i32const(IOVEC + 4),
  ...op.i32const(len),
  ...op.i32store,
];
/** fd_write(stdout, iovec, 1, &nwritten), result dropped (fd_write is import 0). */
const writeStdout = [
  ...op.i32const(1),
  ...op.i32const(IOVEC),
  ...op.i32const(1),
  ...op.i32const(NWRITTEN),
  ...op.call(0),
  ...op.drop,
];

export function helloWasm(message = 'hello\n', exitCode?: number): Uint8Array {
  const msg = [...Buffer.from(message, 'utf8')];
  const MSG = 16;
  return wasiModule({
    imports: [
      { name: 'fd_write', type: TYPE_FOUR_I32 },
      { name: 'proc_exit', type: TYPE_PROC_EXIT },
    ],
    locals: 0,
    body: [
      ...setIovec(MSG, msg.length),
      ...writeStdout,
      ...(exitCode === undefined ? [] : [...op.i32const(exitCode), ...op.call(1)]),
    ],
    dataAt: MSG,
    data: msg,
  });
}

const le64 = (n: bigint): number[] => [...Array(8)].map((_, i) => Number((n >> BigInt(8 * i)) & 0xffn));

/**
 * A module that writes `message` every `everyMs` and never ends. It sleeps with WASI poll_oneoff
 * in slices of `sliceMs`, so a stop (worker.terminate) takes effect within one slice.
 */
export function tickerWasm(message = 'tick\n', everyMs = 5000, sliceMs = 250): Uint8Array {
  const msg = [...Buffer.from(message, 'utf8')];
  const slices = Math.max(1, Math.round(everyMs / sliceMs));
  const NEVENTS = 12;
  const SUB = 16; // subscription_t, 48 bytes, 8-aligned
  const EVENT = 64; // event_t, 32 bytes
  const MSG = 96;
  // subscription: userdata 0, tag 0 (clock), clock id 1 (monotonic), relative timeout, precision 0.
  const sub = [
    ...le64(0n),
    0x00,
    ...Array(7).fill(0),
    ...[0x01, 0x00, 0x00, 0x00],
    ...Array(4).fill(0),
    ...le64(BigInt(sliceMs) * 1_000_000n),
    ...le64(0n),
    ...[0x00, 0x00],
    ...Array(6).fill(0),
  ];
  const data = [...sub, ...Array(EVENT + 32 - (SUB + sub.length)).fill(0), ...msg];
  const I = 0; // local: slices left before the next line
  return wasiModule({
    imports: [
      { name: 'fd_write', type: TYPE_FOUR_I32 },
      { name: 'poll_oneoff', type: TYPE_FOUR_I32 },
    ],
    locals: 1,
    body: [
      ...setIovec(MSG, msg.length),
      ...op.loop, // forever:
      ...writeStdout,
      ...op.i32const(slices),
      ...op.localSet(I),
      ...op.loop, //   sleep `slices` slices
      ...[...op.i32const(SUB), ...op.i32const(EVENT), ...op.i32const(1), ...op.i32const(NEVENTS)],
      ...op.call(1),
      ...op.drop,
      ...op.localGet(I),
      ...op.i32const(1),
      ...op.i32sub,
      ...op.localTee(I),
      ...op.brIf(0),
      ...op.end,
      ...op.br(0),
      ...op.end,
    ],
    dataAt: SUB,
    data,
  });
}
