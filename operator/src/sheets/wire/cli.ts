// `retrokube sheets wire serve|expose` — TCP through a sheet (spec §8).
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { openWorkbook } from '../apiserver/open.ts';
import { sheetsGroup } from '../ctl/verbs.ts';
import type { Dir } from './frames.ts';
import { LIMITS, parseHostPort, WireExpose, WireServe } from './relay.ts';
import { GoogleTransport, StoreTransport, type WireTransport } from './transport.ts';

interface WireFlags {
  wire: string;
  service: string;
  tick: number;
  googleCredentials?: string;
  googleRootUrl?: string;
}

/** `--wire` names the sheet: an .xlsx file (shared by both sides) or google:<spreadsheetId>. */
export async function openTransport(o: WireFlags, outbound: Dir): Promise<WireTransport> {
  if (o.wire.startsWith('google:')) {
    const id = o.wire.slice('google:'.length);
    const credFile =
      o.googleCredentials ?? process.env.GOOGLE_APPLICATION_CREDENTIALS ?? process.env.SHEETSOP_CREDS;
    if (!credFile)
      throw new Error(
        'a google: wire needs credentials: pass --google-credentials FILE (or set SHEETSOP_CREDS)',
      );
    const [{ google }, { authFromCredentials }] = await Promise.all([
      import('googleapis'),
      import('../store/google.ts'),
    ]);
    const auth = authFromCredentials(await readFile(credFile, 'utf8'));
    const api = google.sheets({
      version: 'v4',
      auth,
      retry: false,
      ...(o.googleRootUrl ? { rootUrl: o.googleRootUrl } : {}),
    });
    return new GoogleTransport({ api, spreadsheetId: id, outbound });
  }
  // Saves every 50 ms at most: the tick, not the store, sets the pace of the wire.
  return new StoreTransport(await openWorkbook(o.wire, { flushDelayMs: 50 }), outbound, true);
}

function tickSeconds(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0.01 || n > 60)
    throw new Error(`--tick ${v} must be seconds between 0.01 and 60`);
  return n;
}

function common(cmd: Command): Command {
  return cmd
    .requiredOption(
      '--wire <sheet>',
      'the shared sheet: an .xlsx file both sides can reach, or google:<spreadsheetId>',
    )
    .requiredOption('--service <name>', 'service name carried by open frames')
    .option(
      '--tick <s>',
      'seconds between polls/flushes (env SHEETWIRE_TICK; Google allows 60 writes/min/user)',
      tickSeconds,
      Number(process.env.SHEETWIRE_TICK ?? LIMITS.defaultTickMs / 1000),
    )
    .option('--google-credentials <file>', 'credentials JSON for a google: wire (env SHEETSOP_CREDS)')
    .option('--google-root-url <url>', 'Sheets API root URL (an emulator)');
}

const untilSignal = () =>
  new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });

export function registerSheetsWireVerbs(program: Command): void {
  const wire = sheetsGroup(program).command('wire').description('Sheetwire: TCP through a shared sheet');
  common(wire.command('serve').description('side B: dial --target for every connection the sheet opens'))
    .requiredOption('--target <host:port>', 'the service to reach, e.g. 127.0.0.1:8080')
    .addHelpText(
      'after',
      '\nExample:\n  retrokube sheets wire serve --wire shared.xlsx --service web --target 127.0.0.1:8080\n',
    )
    .action(async (o: WireFlags & { target: string }) => {
      const target = parseHostPort('--target', o.target);
      const ep = new WireServe({
        transport: await openTransport(o, 'b2a'),
        service: o.service,
        tickMs: o.tick * 1000,
        target,
      });
      await ep.start();
      process.stdout.write(`[sheetwire] serve ${o.service} -> ${target.host}:${target.port} via ${o.wire}\n`);
      await untilSignal();
      await ep.stop();
    });
  common(
    wire.command('expose').description('side A: listen locally; every connection travels through the sheet'),
  )
    .requiredOption('--listen <host:port>', 'where to accept connections (a bare port binds 127.0.0.1)')
    .addHelpText(
      'after',
      '\nExample:\n  retrokube sheets wire expose --wire shared.xlsx --service web --listen 127.0.0.1:9090\n',
    )
    .action(async (o: WireFlags & { listen: string }) => {
      const listen = parseHostPort('--listen', o.listen);
      const ep = new WireExpose({
        transport: await openTransport(o, 'a2b'),
        service: o.service,
        tickMs: o.tick * 1000,
        listen,
      });
      const addr = await ep.listenAndStart();
      process.stdout.write(`[sheetwire] expose ${o.service} on ${addr.address}:${addr.port} via ${o.wire}\n`);
      await untilSignal();
      await ep.stop();
    });
}
