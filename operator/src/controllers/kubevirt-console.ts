// Lines to a running KubeVirt VM's serial port, through KubeVirt's own channel to it: the VMI's
// `console` subresource (what `virtctl console` opens). The API server hands the WebSocket to
// virt-api, virt-api to the node's virt-handler, virt-handler to the socket QEMU listens on — our
// hook wires that socket to the RISC5 board's RS-232 port, which Oberon's Boot keeps reading.
// The board takes up to 4 KiB at once (its receive buffer), so what is sent here is in the machine
// before the connection closes. KubeVirt allows one console connection per VMI: a person's open
// `virtctl console` is replaced by this one for the moment it lasts.
import type WebSocket from 'ws';
import type { KubeClient } from '../runtime/client.ts';

export const CONSOLE_LIMITS = {
  openMs: 15_000, // API server → virt-api → virt-handler → QEMU's socket, on a loaded node
  // The whole exchange, open to close: the reconcile awaits it, so it must end even when a proxy
  // on the way goes quiet after the upgrade (a reconcile that never returns stalls its cluster).
  totalMs: 30_000,
  maxBytes: 4_096, // the board's RS-232 receive buffer (qemu/hw/risc5/oberon.c SERIAL_IN_MAX)
  protocol: 'plain.kubevirt.io', // the WebSocket subprotocol of KubeVirt's console and VNC
} as const;

export const consolePath = (namespace: string, vmi: string): string =>
  `/apis/subresources.kubevirt.io/v1/namespaces/${encodeURIComponent(namespace)}/virtualmachineinstances/${encodeURIComponent(vmi)}/console`;

/** Sends `text` to the VMI's serial port; rejects with what failed (never retries: the caller's loop does). */
export async function sendToSerialConsole(
  client: KubeClient,
  namespace: string,
  vmi: string,
  text: string,
  limits: { openMs: number; totalMs: number } = CONSOLE_LIMITS,
): Promise<void> {
  const bytes = Buffer.from(text, 'latin1');
  if (bytes.length > CONSOLE_LIMITS.maxBytes)
    throw new Error(
      `${bytes.length} bytes for the serial port; the board takes ${CONSOLE_LIMITS.maxBytes} at once`,
    );
  const url = new URL(consolePath(namespace, vmi), client.server);
  url.protocol = url.protocol === 'http:' ? 'ws:' : 'wss:';
  // The client's own credentials and TLS material (a token read again each time, the cluster CA).
  const opts: WebSocket.ClientOptions = { handshakeTimeout: limits.openMs };
  await client.kc.applyToHTTPSOptions(opts as Parameters<KubeClient['kc']['applyToHTTPSOptions']>[0]);
  // The WebSocket library loads with the first KubeVirt machine's console, not with the operator (#32).
  const { default: Socket } = await import('ws');
  await new Promise<void>((resolve, reject) => {
    const ws = new Socket(url, [CONSOLE_LIMITS.protocol], opts);
    let settled = false;
    const settle = (err?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      if (err) {
        ws.terminate();
        reject(err);
      } else resolve();
    };
    const fail = (why: string) => settle(new Error(`serial console of VMI ${namespace}/${vmi}: ${why}`));
    const deadline = setTimeout(() => fail(`not done within ${limits.totalMs / 1000} s`), limits.totalMs);
    ws.on('unexpected-response', (_req, res) =>
      fail(`HTTP ${res.statusCode} ${res.statusMessage ?? ''}`.trim()),
    );
    ws.on('error', (err) => fail(err.message));
    ws.on('close', (code) => fail(`closed by the other end (code ${code}) before the lines were sent`));
    ws.on('open', () => {
      ws.send(bytes, { binary: true }, (err) => {
        if (err) return fail(err.message);
        settle();
        ws.close(1000);
      });
    });
  });
}
