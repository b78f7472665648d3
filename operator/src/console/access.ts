// Who may steer through the console (#28.13): like Jupyter, the console has a token, printed once in
// its URL (`/?token=…`). Opening that URL sets an HttpOnly, SameSite=Strict cookie; a request with the
// cookie (or `Authorization: Bearer TOKEN`) may act. Without it the console is read-only: the page,
// the JSON reads and the event socket work, actions and input sockets answer 401 with how to get in.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

export const LIMITS = {
  tokenBytes: 24, // 192 bits, hex
} as const;

export const COOKIE = 'rk_console';

export const newConsoleToken = (): string => randomBytes(LIMITS.tokenBytes).toString('hex');

const same = (a: string, b: string): boolean => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

function cookieValue(req: IncomingMessage): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === COOKIE) return v.join('=');
  }
  return undefined;
}

/** True when REQ carries the console's token: cookie, bearer header, or `?token=` in its URL. */
export function hasToken(req: IncomingMessage, token: string): boolean {
  const given =
    cookieValue(req) ??
    /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1] ??
    new URL(req.url ?? '/', 'http://x').searchParams.get('token') ??
    undefined;
  return given !== undefined && same(given, token);
}

/** On the page's GET with the right `?token=`: the cookie that lets this browser act from now on. */
export function grantCookie(req: IncomingMessage, res: ServerResponse, token: string): void {
  const q = new URL(req.url ?? '/', 'http://x').searchParams.get('token');
  if (q !== null && same(q, token))
    res.setHeader('set-cookie', `${COOKIE}=${token}; HttpOnly; SameSite=Strict; Path=/`);
}

export const READ_ONLY =
  'this console is read-only without its token: open the URL it printed (…/?token=…), or send Authorization: Bearer TOKEN';
