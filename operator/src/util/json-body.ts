import type http from 'node:http';

/** A request the client must fix: control endpoints answer it with 400 and the message. */
export class BadRequest extends Error {}

/** A request naming something that is not there: answered with 404 and the message. */
export class NotFound extends Error {}

/**
 * Reads a small JSON object body (the loopback control endpoints' requests). An empty body is {};
 * a larger body than maxBytes, or anything but a JSON object, is a BadRequest saying so.
 */
export function readJsonObject(
  req: http.IncomingMessage,
  maxBytes: number,
  example = '{}',
): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > maxBytes) {
        reject(new BadRequest(`body larger than ${maxBytes} bytes`));
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8').trim();
      if (!text) return resolve({});
      try {
        const v: unknown = JSON.parse(text);
        if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not an object');
        resolve(v as Record<string, unknown>);
      } catch {
        reject(new BadRequest(`body must be a JSON object, for example ${example}`));
      }
    });
    req.on('error', reject);
  });
}
