// Test helper process: writes to an xlsx store as fast as it can and prints "ack <name>" after each
// durable transaction resolves. The durability test kills it with SIGKILL at a random moment.
import { setupCluster } from '../setup.ts';
import { openXlsxStore } from '../xlsx.ts';

const [file, startArg] = process.argv.slice(2);
const store = await openXlsxStore(file, { watchMs: 0, flushDelayMs: 20 });
await setupCluster(store, { samples: false });
let i = Number(startArg ?? 0);
process.stdout.write('ready\n');
for (;;) {
  const batch = Array.from({ length: 8 }, () => i++);
  await Promise.all([
    ...batch.map((n) =>
      store
        .transact((tx) => tx.upsert('Deployments', { name: `d${n}`, replicas: n, image: 'x'.repeat(n % 50) }))
        .then(() => {
          process.stdout.write(`ack d${n}\n`);
        }),
    ),
    store.transact((tx) => tx.upsert('Nodes', { name: 'n1', last_heartbeat: i }), { durability: 'buffered' }),
  ]);
}
