// One bounded HTTP exchange over node:http (node:https for https URLs), for the clients a CLI verb
// runs (the apiserver client, the air relay's control), not fetch: fetch loads Node's bundled undici
// on its first call, about as long as the rest of `skctl get` or `sheets bridge status` takes to
// start (#32). What fetch did for them, this does too: one timeout over the whole exchange, body
// included (a DOMException named TimeoutError, as fetch's), redirects followed as fetch follows them
// or not at all, and the answer bounded while it is read. Connection errors keep Node's code
// (ECONNREFUSED). The modules come from process.getBuiltinModule, not `import ... from 'node:http'`:
// Node 24's ESM face of node:http reads every export, its lazy WebSocket among them, and so loads
// undici (and http2) all the same, ~30 ms; `https` is asked for only by an https URL (TLS: ~15 ms).
const http = process.getBuiltinModule('node:http');

export const EXCHANGE_LIMITS = {
  /** Redirects followed before giving up: fetch's limit. */
  MAX_REDIRECTS: 20,
} as const;

export interface Exchange {
  method: 'GET' | 'POST';
  body?: string;
  headers?: Record<string, string>;
  timeoutMs: number;
  /** Past this many bytes the answer is refused and its download stopped. */
  maxBytes: number;
  /** Follow redirects (as fetch's 'follow'); otherwise a 3xx is the answer (its body not read). */
  followRedirects: boolean;
}

export interface Answer {
  status: number;
  /** The body as text ('' for a redirect). */
  text: string;
}

/** The answer was larger than `maxBytes`: the server answered, so this is not "unreachable". */
export class AnswerTooLarge extends Error {
  constructor(maxBytes: number) {
    super(`the answer is larger than ${maxBytes} bytes: not read further`);
  }
}

interface Hop extends Answer {
  location?: string;
}

export async function exchange(url: string, x: Exchange): Promise<Answer> {
  const signal = AbortSignal.timeout(x.timeoutMs);
  let target = new URL(url);
  let { method, body } = x;
  for (let hops = 0; ; hops++) {
    const a = await hop(target, method, body, x, signal);
    if (!x.followRedirects || a.location === undefined) return { status: a.status, text: a.text };
    if (hops >= EXCHANGE_LIMITS.MAX_REDIRECTS)
      throw new Error(`more than ${EXCHANGE_LIMITS.MAX_REDIRECTS} redirects from ${url}`);
    target = new URL(a.location, target);
    // As fetch: 303 reads with GET; 301 and 302 turn a POST into a GET; 307 and 308 repeat it.
    if (a.status === 303 || (method === 'POST' && (a.status === 301 || a.status === 302))) {
      method = 'GET';
      body = undefined;
    }
  }
}

function hop(
  url: URL,
  method: string,
  body: string | undefined,
  x: Exchange,
  signal: AbortSignal,
): Promise<Hop> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error(`${url.protocol} URLs are not served: give an http:// or https:// URL`);
  const client = url.protocol === 'https:' ? process.getBuiltinModule('node:https') : http;
  return new Promise((resolve, reject) => {
    // After the deadline every error is the timeout, as fetch reports it.
    const fail = (e: unknown) => reject(signal.aborted ? signal.reason : e);
    const headers = {
      ...x.headers,
      ...(body === undefined ? {} : { 'content-length': Buffer.byteLength(body) }),
    };
    const req = client.request(url, { method, headers, signal });
    req.on('error', fail);
    req.on('response', (res) => {
      res.on('error', fail);
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400) {
        res.resume(); // a redirect's body is never read
        const location = res.headers.location;
        resolve({ status, text: '', location: x.followRedirects ? location : undefined });
        return;
      }
      const chunks: Buffer[] = [];
      let n = 0;
      res.on('data', (chunk: Buffer) => {
        n += chunk.byteLength;
        if (n > x.maxBytes) {
          res.destroy();
          reject(new AnswerTooLarge(x.maxBytes));
        } else chunks.push(chunk);
      });
      res.on('end', () => resolve({ status, text: Buffer.concat(chunks).toString('utf8') }));
      // A connection closed mid-answer: no 'end', and on older paths no 'error' either.
      res.on('close', () => {
        if (!res.complete)
          fail(Object.assign(new Error('the connection closed mid-answer'), { code: 'ECONNRESET' }));
      });
    });
    req.end(body);
  });
}
