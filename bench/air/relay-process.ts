// Runs one of our relays as a process of its own, as `retrokube air relay` runs and as the bench
// runs the reference (reference-relay.py): the same protocol, so compare.ts drives both alike.
// Prints `air relay on udp/PORT`; on SIGUSR1, `delivered N` (deliveries made so far).
//   node bench/air/relay-process.ts [--raw] [--relay PATH/TO/relay.ts]
import { pathToFileURL } from 'node:url';

const at = process.argv.indexOf('--relay');
const from = at > 0 ? pathToFileURL(process.argv[at + 1] as string).href : '../../operator/src/air/relay.ts';
const { startRelay } = (await import(from)) as typeof import('../../operator/src/air/relay.ts');
const raw = process.argv.includes('--raw');
const relay = await startRelay({ port: 0, bind: '127.0.0.1', ...(raw ? { rate: null } : {}) });
process.stdout.write(`air relay on udp/${relay.address.port}\n`);
process.on('SIGUSR1', () => process.stdout.write(`delivered ${relay.stats().framesOut}\n`));
process.on('SIGTERM', () => void relay.close().then(() => process.exit(0)));
