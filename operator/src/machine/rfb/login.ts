// The client side of an RFB 3.8 handshake up to SecurityResult: connects to a machine's RFB
// server and logs in, with VNC Authentication when a password is given (else security None).
// The web console uses it to bridge a page to a screen that needs a password (#28.2): the page
// never sees the password; the console's own token decides who may open the bridge.
//
//   const { socket, rest } = await rfbLogin({ port, password });   // then ClientInit onwards
import { connect, type Socket } from 'node:net';
import { vncAuthResponse } from './des.ts';

export const LOGIN_LIMITS = {
  timeoutMs: 10_000, // the server's own handshake deadline: a server that takes longer is not answering
  maxReasonBytes: 1024, // a refusal's reason text read at most
} as const;

/** Reads exact byte counts from a socket (an RFB handshake is a fixed sequence of small reads). */
class ByteReader {
  private buf = Buffer.alloc(0);
  private wake: (() => void) | null = null;
  private ended: Error | null = null;
  constructor(socket: Socket) {
    socket.on('data', (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.wake?.();
    });
    const end = (e?: Error) => {
      this.ended = e ?? new Error('the RFB server closed the connection during the handshake');
      this.wake?.();
    };
    socket.on('end', () => end());
    socket.on('close', () => end());
    socket.on('error', end);
  }
  async read(n: number): Promise<Buffer> {
    while (this.buf.length < n) {
      if (this.ended) throw this.ended;
      await new Promise<void>((r) => {
        this.wake = r;
      });
      this.wake = null;
    }
    const out = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(n);
    return out;
  }
  /** Bytes already received past the handshake (the server may send ServerInit early: it does not). */
  rest(): Buffer {
    return this.buf;
  }
}

export interface RfbLogin {
  socket: Socket;
  /** Bytes the server sent after SecurityResult that were already read (normally none). */
  rest: Buffer;
}

/** Connects to 127.0.0.1:port (or host) and completes version and security; throws saying why not. */
export async function rfbLogin(o: { port: number; host?: string; password?: string }): Promise<RfbLogin> {
  const socket = connect(o.port, o.host ?? '127.0.0.1');
  const reader = new ByteReader(socket);
  const timer = setTimeout(
    () =>
      socket.destroy(
        new Error(`the RFB server did not finish the handshake in ${LOGIN_LIMITS.timeoutMs} ms`),
      ),
    LOGIN_LIMITS.timeoutMs,
  );
  try {
    const version = (await reader.read(12)).toString('latin1');
    if (!/^RFB 003\.00[78]\n$/.test(version))
      throw new Error(`not an RFB 3.7/3.8 server (${JSON.stringify(version)})`);
    socket.write('RFB 003.008\n');
    const count = (await reader.read(1))[0];
    if (count === 0) throw new Error(await reason(reader));
    const types = [...(await reader.read(count))];
    if (o.password !== undefined && types.includes(2)) {
      socket.write(Buffer.from([2]));
      const challenge = await reader.read(16);
      socket.write(vncAuthResponse(o.password, challenge));
    } else if (types.includes(1)) {
      socket.write(Buffer.from([1]));
    } else {
      throw new Error(
        o.password === undefined
          ? 'the screen wants a VNC password and none was given'
          : `the screen offers no security type this client speaks (${types.join(', ')})`,
      );
    }
    if ((await reader.read(4)).readUInt32BE(0) !== 0) throw new Error(await reason(reader));
    clearTimeout(timer);
    socket.pause(); // the caller's 'data' handler resumes it: nothing is dropped in between
    socket.removeAllListeners('data');
    socket.removeAllListeners('end');
    socket.removeAllListeners('close');
    socket.removeAllListeners('error');
    return { socket, rest: reader.rest() };
  } catch (e) {
    clearTimeout(timer);
    socket.destroy();
    throw e;
  }
}

async function reason(reader: ByteReader): Promise<string> {
  try {
    const n = Math.min((await reader.read(4)).readUInt32BE(0), LOGIN_LIMITS.maxReasonBytes);
    return `the RFB server refused: ${(await reader.read(n)).toString('latin1')}`;
  } catch {
    return 'the RFB server refused the connection';
  }
}
