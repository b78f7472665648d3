// WebSocket ⇄ TCP to a machine's RFB server (what websockify does for noVNC), logging in on the
// page's behalf: the console opens the bridge only for holders of its token (console/access.ts),
// then speaks VNC Authentication to the machine with the screen's password (#28.2) and offers
// the page security None, so the password never reaches a page. Bytes after the handshake pass
// through untouched, with backpressure towards the machine.
import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import { rfbLogin } from '../machine/rfb/login.ts';

export const BRIDGE_LIMITS = {
  maxBufferedBytes: 4 << 20, // an RFB stream pauses its machine side above this
  maxPageHandshakeBytes: 64, // what a page may send before the handshake is done (12 + 1 + a few)
  resumePollMs: 50,
} as const;

/** Bridges one page socket to the screen at 127.0.0.1:port; `done` runs once when either side closes. */
export function bridgeRfb(ws: WebSocket, o: { port: number; password?: string }, done: () => void): void {
  let closed = false;
  let tcp: Socket | null = null;
  let fromPage: Buffer = Buffer.alloc(0);
  let toPage: Buffer = Buffer.alloc(0); // what the machine sent past its handshake before the page's was done
  let phase: 'login' | 'version' | 'security' | 'open' = 'login';
  const close = (why?: string): void => {
    if (closed) return;
    closed = true;
    done();
    tcp?.destroy();
    ws.close(why ? 1011 : 1000, why?.slice(0, 120));
  };
  const step = (): void => {
    // the page's side of a 3.8 handshake with security None: its version, then its choice (1)
    if (phase === 'version' && fromPage.length >= 12) {
      fromPage = fromPage.subarray(12);
      phase = 'security';
      ws.send(Buffer.from([1, 1]));
    }
    if (phase === 'security' && fromPage.length >= 1) {
      if (fromPage[0] !== 1) {
        close('the page chose a security type other than None');
        return;
      }
      fromPage = fromPage.subarray(1);
      phase = 'open';
      ws.send(Buffer.from([0, 0, 0, 0]));
      if (toPage.length > 0) ws.send(toPage);
      if (fromPage.length > 0) tcp?.write(fromPage);
      fromPage = Buffer.alloc(0);
      tcp?.resume();
    }
    if (phase !== 'open' && fromPage.length > BRIDGE_LIMITS.maxPageHandshakeBytes)
      close('the page sent too much before the handshake ended');
  };
  ws.on('message', (d: Buffer) => {
    if (phase === 'open') tcp?.write(d);
    else {
      fromPage = Buffer.concat([fromPage, d]);
      step();
    }
  });
  ws.on('close', () => close());
  ws.on('error', () => close());
  rfbLogin({ port: o.port, password: o.password }).then(
    ({ socket, rest }) => {
      if (closed) {
        socket.destroy();
        return;
      }
      tcp = socket;
      socket.on('data', (d: Buffer) => {
        ws.send(d);
        if (ws.bufferedAmount > BRIDGE_LIMITS.maxBufferedBytes) {
          socket.pause();
          const wait = setInterval(() => {
            if (closed || ws.bufferedAmount < BRIDGE_LIMITS.maxBufferedBytes / 4) {
              clearInterval(wait);
              socket.resume();
            }
          }, BRIDGE_LIMITS.resumePollMs);
        }
      });
      socket.on('error', () => close());
      socket.on('close', () => close());
      toPage = rest;
      phase = 'version';
      ws.send(Buffer.from('RFB 003.008\n', 'latin1'));
      step();
    },
    (e: Error) => close(`the machine's screen refused the console: ${e.message}`),
  );
}
