// A tiny WASI (preview1) module assembled byte by byte: it writes a message to stdout and
// optionally exits with a code. It is the sample "hello" image of a new cluster and the module the
// tests run, so nothing needs a WebAssembly toolchain.

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
const DATA_AT = 16; // the message's address in linear memory; bytes 0..7 hold the iovec

export function helloWasm(message = 'hello\n', exitCode?: number): Uint8Array {
  const msg = [...Buffer.from(message, 'utf8')];
  const types = vec([
    [0x60, ...vec([[I32], [I32], [I32], [I32]]), ...vec([[I32]])], // fd_write
    [0x60, ...vec([[I32]]), 0x00], // proc_exit
    [0x60, 0x00, 0x00], // _start
  ]);
  const imports = vec([
    [...str('wasi_snapshot_preview1'), ...str('fd_write'), 0x00, 0x00],
    [...str('wasi_snapshot_preview1'), ...str('proc_exit'), 0x00, 0x01],
  ]);
  const code = [
    0x00, // no locals
    0x41,
    0x00,
    0x41,
    ...sleb(DATA_AT),
    0x36,
    0x02,
    0x00, // iovec.buf = DATA_AT
    0x41,
    0x04,
    0x41,
    ...sleb(msg.length),
    0x36,
    0x02,
    0x00, // iovec.len = message length
    0x41,
    0x01,
    0x41,
    0x00,
    0x41,
    0x01,
    0x41,
    0x08,
    0x10,
    0x00,
    0x1a, // drop(fd_write(1, iov, 1, &nwritten))
    ...(exitCode === undefined ? [] : [0x41, ...sleb(exitCode), 0x10, 0x01]), // proc_exit(code)
    0x0b,
  ];
  const bytes = [
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00,
    ...section(1, types),
    ...section(2, imports),
    ...section(3, vec([[0x02]])),
    ...section(5, vec([[0x00, 0x01]])),
    ...section(
      7,
      vec([
        [...str('memory'), 0x02, 0x00],
        [...str('_start'), 0x00, 0x02],
      ]),
    ),
    ...section(10, vec([[...uleb(code.length), ...code]])),
    ...section(11, vec([[0x00, 0x41, ...sleb(DATA_AT), 0x0b, ...uleb(msg.length), ...msg]])),
  ];
  return Uint8Array.from(bytes);
}
