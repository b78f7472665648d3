// Test helper process: writes to an xlsx store as fast as it can and prints "ack <name> <value>"
// after each durable transaction resolves. The durability test kills it with SIGKILL — from outside after a
// number of acknowledgements, or from inside at a named point of the save/journal protocol
// (argv[4] = "<point>:<n>": the n-th time that point is passed with a write acknowledged since the
// journal's last cut, the process prints "crash <point>" and sends itself SIGKILL):
//   cut       a journal generation was cut at a save's snapshot; the save has not started writing
//   prepared  the save's temp file is written and fsynced; the journal does not know its hash yet
//   intended  the journal holds the temp file's hash; the file is not renamed into place yet
//   renamed   the save is renamed into place; the journal has not recorded it as the base yet
//   saved     the save is recorded as the base and the older generations are deleted
import { setupCluster } from '../setup.ts';
import { openXlsxStore } from '../xlsx.ts';
import { Journal } from '../xlsx-journal.ts';

const [file, startArg, crashAt] = process.argv.slice(2);

let acksSinceCut = 0;
if (crashAt) {
  const [point, nth] = crashAt.split(':');
  let passed = 0;
  const at = (name: string) => {
    if (name !== point || (name !== 'cut' && acksSinceCut === 0) || ++passed < Number(nth)) return;
    process.stdout.write(`crash ${name}\n`); // stdout to a pipe is synchronous: the test sees it
    process.kill(process.pid, 'SIGKILL');
  };
  const proto = Journal.prototype;
  const { cut, intend, saved } = proto;
  proto.cut = async function (this: Journal, ...a: Parameters<typeof cut>) {
    const gen = await cut.apply(this, a);
    acksSinceCut = 0;
    at('cut');
    return gen;
  };
  proto.intend = async function (this: Journal, ...a: Parameters<typeof intend>) {
    at('prepared');
    await intend.apply(this, a);
    at('intended');
  };
  proto.saved = async function (this: Journal, ...a: Parameters<typeof saved>) {
    at('renamed');
    await saved.apply(this, a);
    at('saved');
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
          acksSinceCut++;
          process.stdout.write(`ack ${name} ${n}\n`);
        });
    }),
    store.transact((tx) => tx.upsert('Nodes', { name: 'n1', last_heartbeat: i }), { durability: 'buffered' }),
  ]);
}
