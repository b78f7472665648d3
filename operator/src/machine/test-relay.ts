// Test helper: a minimal air relay over real UDP sockets on 127.0.0.1.
import dgram from 'node:dgram';

/** A relay stub: learns stations from any datagram and forwards 33-byte frames to all others. */
export async function relay(): Promise<{ port: number; heard: Buffer[]; close: () => void }> {
  const sock = dgram.createSocket('udp4');
  const stations = new Map<string, { address: string; port: number }>();
  const heard: Buffer[] = [];
  sock.on('message', (msg, from) => {
    const key = `${from.address}:${from.port}`;
    stations.set(key, { address: from.address, port: from.port });
    heard.push(msg);
    if (msg.length !== 33) return;
    for (const [k, s] of stations) if (k !== key) sock.send(msg, s.port, s.address);
  });
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', r));
  return { port: sock.address().port, heard, close: () => sock.close() };
}
