// Binds the relay's socket to its port, with the error a person can act on.
import dgram from 'node:dgram';
import { isIPv6 } from 'node:net';

/**
 * Binds `socket` to `port` of `bind`. `reusePort` (a socket created with SO_REUSEPORT, so the
 * stations' connected sockets and a send thread's share the port): that takes away the kernel's
 * busy-port check (two such relays of one user would share the port), so a plain socket claims the
 * port first, and one that is taken fails as without it.
 */
export async function bindRelay(
  socket: dgram.Socket,
  bind: string,
  port: number,
  reusePort: boolean,
): Promise<void> {
  const bindTo = (sock: dgram.Socket, p: number): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      sock.once('error', (err: NodeJS.ErrnoException) => {
        sock.close();
        reject(
          new Error(
            `cannot open the air on udp ${bind}:${port} (${err.code ?? err.message}); ` +
              (err.code === 'EADDRINUSE'
                ? 'another relay runs there: pick a port with --port'
                : 'check --bind'),
          ),
        );
      });
      sock.bind(p, bind, () => {
        sock.removeAllListeners('error');
        resolve();
      });
    });
  if (!reusePort) return bindTo(socket, port);
  const probe = dgram.createSocket(isIPv6(bind) ? 'udp6' : 'udp4');
  await bindTo(probe, port);
  const claimed = probe.address().port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  await bindTo(socket, claimed);
}
