// Test helper process: writes to an xlsx store as fast as it can and prints "ack <name> <value>"
// after each durable transaction resolves. The durability test kills it with SIGKILL — from outside
// after a number of acknowledgements, or from inside at a named point of the save/journal protocol
// (argv[4] = "<point>:<n>": the n-th time that point is passed with writes acknowledged — since the
// journal's last cut, for the points after one — the save stops there, the process prints
// "crash <point>" and sends itself SIGKILL):
//   cut       a journal generation was cut at a save's snapshot; the save has not started writing
//   prepared  the save's temp file is written and fsynced; the journal does not know its hash yet
//   intended  the journal holds the temp file's hash; the file is not renamed into place yet
//   renamed   the save is renamed into place; the journal has not recorded it as the base yet
//   saved     the save is recorded as the base and the older generations are deleted
import { setupCluster } from '../setup.ts';
import { openXlsxStore } from '../xlsx.ts';
import { Journal } from '../xlsx-journal.ts';

const [file, startArg, crashAt] = process.argv.slice(2);

let acks = 0;
let acksSinceCut = 0;
if (crashAt) {
  const [point, nth] = crashAt.split(':');
  let passed = 0;
  // A point counts once this process has a write acknowledged (and, past a cut, one since the cut):
  // a kill there then always has acknowledged writes of its own to lose.
  const at = (name: string): boolean =>
    name === point && acks > 0 && (name === 'cut' || acksSinceCut > 0) && ++passed === Number(nth);
  // The save stops where it is (this never resolves) until the test has read "crash <point>" —
  // under load the pipe can be full, and a line still queued here would die with the process —
  // then SIGKILL. Writes go on meanwhile, acknowledged through the journal as always.
  const crash = (name: string): Promise<never> => {
    process.stdout.write(`crash ${name}\n`, () => process.kill(process.pid, 'SIGKILL'));
    return new Promise<never>(() => {});
  };
  const proto = Journal.prototype;
  const { cut, intend, saved } = proto;
  proto.cut = async function (this: Journal, ...a: Parameters<typeof cut>) {
    const gen = await cut.apply(this, a);
    acksSinceCut = 0;
    if (at('cut')) await crash('cut');
    return gen;
  };
  proto.intend = async function (this: Journal, ...a: Parameters<typeof intend>) {
    if (at('prepared')) await crash('prepared');
    await intend.apply(this, a);
    if (at('intended')) await crash('intended');
  };
  proto.saved = async function (this: Journal, ...a: Parameters<typeof saved>) {
    if (at('renamed')) await crash('renamed');
    await saved.apply(this, a);
    if (at('saved')) await crash('saved');
  };
}

const store = await openXlsxStore(file, { watchMs: 0, flushDelayMs: 20 });
await setupCluster(store, { samples: false });
// Values only grow: write i sets replicas = i on row d<start + …>. The first NEW_ROWS writes add rows,
// the rest update those rows in turn, so the workbook (and each save) stays small however long the
// process runs before its kill point. An acknowledged write is kept if its row ends with replicas ≥ i.
const NEW_ROWS = 200;
const start = Number(startArg ?? 0);
let i = start;
process.stdout.write('ready\n');
for (;;) {
  const batch = Array.from({ length: 8 }, () => i++);
  await Promise.all([
    ...batch.map((n) => {
      const name = `d${start + ((n - start) % NEW_ROWS)}`;
      return store
        .transact((tx) => tx.upsert('Deployments', { name, replicas: n, image: 'x'.repeat(n % 50) }))
        .then(() => {
          acks++;
          acksSinceCut++;
          process.stdout.write(`ack ${name} ${n}\n`);
        });
    }),
    store.transact((tx) => tx.upsert('Nodes', { name: 'n1', last_heartbeat: i }), { durability: 'buffered' }),
  ]);
}
