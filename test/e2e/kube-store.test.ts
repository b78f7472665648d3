// Kube's commands and its store on the disk, on one machine with local nodes (no radio), run
// with the deterministic clock: the store files Kube.Store0/Kube.Store1 are read from the host
// in the format the spec gives (§4.7) with the checksum recomputed here, a restart restores the
// same objects, a damaged newer snapshot falls back to the older one, and Boot runs its command
// string (empty commands, a failing command, commands sent later on the serial port).
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { OberonVolume } from '../../operator/src/machine/fs/volume.ts';
import { Machine } from '../../operator/src/machine/machine.ts';
import { kubeDisk } from './kube-harness.ts';

const MAGIC = 0x4b554231;
const MOD = 1_000_000_007;
const KINDS = ['Deployment', 'ReplicaSet', 'Pod', 'Node'];

/** mix(h, x) = (h·31 + x) MOD 1e9+7 in the machine's 32-bit signed arithmetic (RISC5 MUL, floor DIV). */
const mix = (h: number, x: number): number => {
  const v = (Math.imul(h, 31) + x) | 0;
  return ((v % MOD) + MOD) % MOD;
};

interface StoredObject {
  kind: string;
  replicas: number;
  phase: number;
  id: number;
  local: boolean;
  name: string;
  owner: string;
  node: string;
  image: string;
}
interface Snapshot {
  gen: number;
  seq: number;
  objects: StoredObject[];
  checksum: number;
  trailerGen: number;
  computed: number;
  /** Where the snapshot ends (a shorter one rewritten in place leaves old bytes after it). */
  end: number;
}

function parseStore(data: Buffer): Snapshot {
  let p = 0;
  const int = () => {
    const v = data.readInt32LE(p);
    p += 4;
    return v;
  };
  const str = () => {
    const end = data.indexOf(0, p);
    const s = data.subarray(p, end).toString('latin1');
    p = end + 1;
    return s;
  };
  expect(int()).toBe(MAGIC);
  const gen = int();
  const seq = int();
  const cnt = int();
  const objects: StoredObject[] = [];
  let h = mix(1, seq);
  for (let i = 0; i < cnt; i++) {
    const kind = int();
    const replicas = int();
    const phase = int();
    const id = int();
    const local = data[p++] !== 0;
    const o = {
      kind: KINDS[kind],
      replicas,
      phase,
      id,
      local,
      name: str(),
      owner: str(),
      node: str(),
      image: str(),
    };
    for (const x of [kind, replicas, phase, id, local ? 1 : 0]) h = mix(h, x);
    for (const s of [o.name, o.owner, o.node, o.image]) {
      for (const ch of Buffer.from(s, 'latin1')) h = mix(h, ch);
      h = mix(h, 0);
    }
    objects.push(o);
  }
  const checksum = int();
  const trailerGen = int();
  return { gen, seq, objects, checksum, trailerGen, computed: h, end: p };
}

const files = (disk: Buffer) => OberonVolume.fromBuffer(disk);
const boot = (disk: Buffer, commands: string, ms = 3000): Machine => {
  const m = new Machine({ disk: Buffer.from(disk), clock: 'deterministic', commands });
  m.runFor(ms);
  return m;
};
const text = (disk: Buffer, name: string): string =>
  files(disk).read(name).toString('latin1').replace(/\r/g, '\n');

describe('Kube: commands and the store on the disk', () => {
  let base: Buffer;
  let disk: Buffer;
  beforeAll(async () => {
    base = readFileSync(await kubeDisk());
  });

  it('keeps the store in Kube.Store0/Kube.Store1 with generation, checksum and trailer as the spec lays them out', () => {
    const m = boot(base, 'Kube.Start local;Kube.Apply web 3 Ticker');
    m.serialFeed('Kube.Save Kube.State;'); // later: boot commands run before any controller step
    m.runFor(500);
    disk = Buffer.from(m.disk.bytes);
    const vol = files(disk);
    const snaps = ['Kube.Store0', 'Kube.Store1']
      .filter((f) => vol.exists(f))
      .map((f) => parseStore(vol.read(f)));
    expect(snaps.length).toBe(2); // written alternately, so both exist after a few changes
    for (const s of snaps) {
      expect(s.trailerGen).toBe(s.gen);
      expect(s.checksum).toBe(s.computed);
    }
    const latest = snaps.reduce((a, b) => (b.gen > a.gen ? b : a));
    const pods = latest.objects.filter((o) => o.kind === 'Pod');
    expect(pods.map((o) => o.phase)).toEqual([1, 1, 1]); // Running on local nodes
    expect(new Set(pods.map((o) => o.node))).toEqual(new Set(['node-a', 'node-b', 'node-c'])); // least loaded
    expect(new Set(pods.map((o) => o.id)).size).toBe(3);
    expect(latest.objects.filter((o) => o.kind === 'Node').every((o) => o.local && o.phase === 1)).toBe(true);
    expect(latest.objects.find((o) => o.kind === 'Deployment')).toMatchObject({
      name: 'web',
      replicas: 3,
      image: 'Ticker',
      id: 1,
    });
    expect(latest.objects.find((o) => o.kind === 'ReplicaSet')).toMatchObject({
      name: 'web-rs',
      owner: 'web',
      replicas: 3,
    });
    expect(latest.seq).toBe(3);
    const state = text(disk, 'Kube.State');
    expect(state).toMatch(/^nodes: node-a Ready, node-b Ready, node-c Ready$/m);
    expect(state).toMatch(/^deployment web {2}replicas=3 {2}image=Ticker$/m);
    expect(state).toMatch(/^ {2}replicaset web-rs {2}desired=3 {2}image=Ticker$/m);
    expect(state.match(/^ {4}pod web-rs-\d+ @node-[abc] Running$/gm)).toHaveLength(3);
  });

  it('restores the same objects after a restart, and a second Ensure keeps the deployment as it is', () => {
    const before = text(disk, 'Kube.State');
    const m = boot(disk, 'Kube.Start;Kube.Ensure web 5 Ticker2;Kube.Save Kube.State');
    expect(text(Buffer.from(m.disk.bytes), 'Kube.State')).toBe(before);
  });

  it('falls back to the older snapshot when the newer one is damaged', () => {
    const scaled = Buffer.from(boot(disk, 'Kube.Start;Kube.Apply web 2 Ticker', 2000).disk.bytes);
    const vol = files(scaled);
    const snaps = ['Kube.Store0', 'Kube.Store1'].map((f) => ({ f, s: parseStore(vol.read(f)) }));
    const newer = snaps.reduce((a, b) => (b.s.gen > a.s.gen ? b : a));
    const older = snaps.find((x) => x !== newer) ?? newer;
    const podsOf = (x: Snapshot) =>
      x.objects
        .filter((o) => o.kind === 'Pod')
        .map((o) => `${o.name} @${o.node}`)
        .sort();
    expect(podsOf(newer.s)).toHaveLength(2);
    expect(podsOf(older.s)).toHaveLength(3);
    const damaged = Buffer.from(vol.read(newer.f));
    const at = newer.s.end - 8; // its checksum
    damaged.writeInt32LE(damaged.readInt32LE(at) ^ 1, at);
    vol.write(newer.f, damaged);
    const m = boot(vol.toBuffer(), 'Kube.Start;Kube.Save Kube.State');
    const got = text(Buffer.from(m.disk.bytes), 'Kube.State');
    const restored = [...got.matchAll(/pod (\S+ @\S+)/g)].map((x) => x[1]).sort();
    expect(restored).toEqual(podsOf(older.s));
  });

  it('rolls out a new image pod by pod, and DeletePod makes the replicaset create a pod with a new id', () => {
    const m = boot(disk, 'Kube.Start;Kube.Apply web 3 Ticker2', 3000);
    m.serialFeed('Kube.Save Before.Text;Kube.DeletePod "web-rs2-3";');
    m.runFor(1000);
    m.serialFeed('Kube.Save Kube.State;');
    m.runFor(500);
    expect(text(Buffer.from(m.disk.bytes), 'Before.Text')).toMatch(
      /^ {4}pod web-rs2-3 @node-[abc] Running$/m,
    );
    const state = text(Buffer.from(m.disk.bytes), 'Kube.State');
    expect(state).toMatch(/^ {2}replicaset web-rs2 {2}desired=3 {2}image=Ticker2$/m);
    expect(state).not.toMatch(/replicaset web-rs /);
    expect(state).not.toContain('web-rs2-3 '); // deleted, replaced under a new name
    expect(state.match(/^ {4}pod web-rs2-\d+ @node-[abc] Running$/gm)).toHaveLength(3);
  });

  it('Boot skips empty commands, goes on after a failing one, and runs commands sent later', () => {
    const m = boot(base, ';;Nope.Run;Kube.Start local;  Kube.Apply web 1 Ticker');
    m.serialFeed('Kube.Save One.Text\r');
    m.runFor(1000);
    m.serialFeed('Kube.Apply web 2;Kube.Save Two.Text;');
    m.runFor(2000);
    const d = Buffer.from(m.disk.bytes);
    expect(text(d, 'One.Text')).toMatch(/^deployment web {2}replicas=1 {2}image=Ticker$/m);
    // No image given to Apply: the running image is kept (the reference would roll out "scratch").
    expect(text(d, 'Two.Text')).toMatch(/^deployment web {2}replicas=2 {2}image=Ticker$/m);
  });

  it('Kube.Reset forgets every object, on the disk too', () => {
    const m = boot(disk, 'Kube.Start;Kube.Reset;Kube.Save Kube.State', 2000);
    const d = Buffer.from(m.disk.bytes);
    expect(text(d, 'Kube.State')).toBe('');
    const vol = files(d);
    // Deleted, or rewritten since as an empty store (the store task writes every change).
    for (const f of ['Kube.Store0', 'Kube.Store1']) {
      if (vol.exists(f)) expect(parseStore(vol.read(f)).objects).toEqual([]);
    }
  });
});
