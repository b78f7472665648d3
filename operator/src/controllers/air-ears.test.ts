import { afterEach, describe, expect, it } from 'vitest';
import { clusterTag, heartbeatDatagram, keyFromHex } from '../air/kubenet.ts';
import { type Relay, startRelay } from '../air/relay.ts';
import { openStation, type Station } from '../air/station.ts';
import { until } from '../air/until.test-helper.ts';
import { AirEars, EARS_LIMITS } from './air-ears.ts';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

async function air(): Promise<{ relay: Relay; ears: AirEars; talker: Station }> {
  const relay = await startRelay({ port: 0, bind: '127.0.0.1' });
  const ears = new AirEars({
    address: (_ns, _air, _port) => ({ host: '127.0.0.1', port: relay.address.port }),
  });
  const talker = await openStation({ host: '127.0.0.1', port: relay.address.port });
  open.push(relay, { close: () => ears.closeAll() }, talker);
  return { relay, ears, talker };
}

describe('the operator’s ears (a real relay on 127.0.0.1)', () => {
  it("open a station by the Service's name only once the relay is ready, or when one is open (the DNS's negative cache)", async () => {
    const ref = { namespace: 'ns', air: 'a' };
    const byName = new AirEars();
    expect(byName.mayListen(ref, false)).toBe(false);
    expect(byName.mayListen(ref, true)).toBe(true);
    byName.hear({ ...ref, port: 7524 }); // opened (the relay was ready): it stays open
    expect(byName.mayListen(ref, false)).toBe(true);
    await byName.closeAll();
    const { ears } = await air(); // an address given: nothing to wait for
    expect(ears.mayListen(ref, false)).toBe(true);
  });

  it('two clusters on one air share its one station; each is judged with its own key, the census names both', async () => {
    const { ears, talker } = await air();
    const ref = { namespace: 'ns', air: 'shared', port: 7524 };
    const keyA = '00000000000000aa';
    const keyB = '00000000000000bb';
    ears.hear(ref);
    ears.cluster(ref, 'ns/alpha', { cluster: 'alpha', keyHex: keyA });
    ears.cluster(ref, 'ns/beta', { cluster: 'beta', keyHex: keyB });
    expect(ears.size).toBe(1);
    // The relay forwards only to stations it has heard a hello from: wait until ours is known.
    await new Promise((r) => setTimeout(r, 200));
    let ctr = 1;
    const send = async () => {
      await talker.send(
        heartbeatDatagram(
          { cluster: clusterTag('alpha'), node: 'a1', ids: [], counter: ctr++ },
          keyFromHex(keyA),
        ),
      );
      await talker.send(
        heartbeatDatagram(
          { cluster: clusterTag('beta'), node: 'b1', ids: [], counter: ctr++ },
          keyFromHex(keyB),
        ),
      );
      // beta's tag with alpha's key: a forgery only beta's key can tell.
      await talker.send(
        heartbeatDatagram(
          { cluster: clusterTag('beta'), node: 'evil', ids: [], counter: ctr++ },
          keyFromHex(keyA),
        ),
      );
    };
    await send();
    await until(() => ears.hear(ref).heard.stations === 3, 5_000, 'three senders heard');
    const alpha = ears.cluster(ref, 'ns/alpha', { cluster: 'alpha', keyHex: keyA }).view;
    const beta = ears.cluster(ref, 'ns/beta', { cluster: 'beta', keyHex: keyB }).view;
    expect(alpha.nodes.map((n) => n.name)).toEqual(['a1']);
    expect(beta.nodes.map((n) => n.name)).toEqual(['b1']);
    expect(beta.counts.forged).toBe(1);
    const census = ears.hear(ref).heard.clusters;
    expect(census.map((c) => [c.name, c.verified, c.forgedFrames])).toEqual(
      [
        ['alpha', true, 0],
        ['beta', true, 1],
      ].sort((x, y) => clusterTag(x[0] as string) - clusterTag(y[0] as string)),
    );

    // A subscriber that goes stops being judged; the air is still heard; closing it ends the station.
    ears.forget(ref, 'ns/beta');
    expect(ears.hear(ref).heard.clusters.find((c) => c.tag === clusterTag('beta'))?.verified).toBe(false);
    ears.close(ref);
    expect(ears.has(ref)).toBe(false);
  });

  it('a key change starts a fresh view for that subscriber (frames judged with the old key are not kept)', async () => {
    const { ears, talker } = await air();
    const ref = { namespace: 'ns', air: 'a', port: 7524 };
    ears.cluster(ref, 'ns/k', { cluster: 'kube', keyHex: '01' });
    await new Promise((r) => setTimeout(r, 200));
    await talker.send(
      heartbeatDatagram({ cluster: clusterTag('kube'), node: 'n1', ids: [], counter: 1 }, keyFromHex('02')),
    );
    await until(
      () => ears.cluster(ref, 'ns/k', { cluster: 'kube', keyHex: '01' }).view.counts.forged === 1,
      5_000,
      'a forgery under the old key',
    );
    expect(ears.cluster(ref, 'ns/k', { cluster: 'kube', keyHex: '02' }).view.counts.frames).toBe(0);
  });

  it('a window of listening begins when the station first hears the air, not when it opened (a lost hello hears nothing)', async () => {
    const { ears, talker } = await air();
    const ref = { namespace: 'ns', air: 'w', port: 7524 };
    const settings = { cluster: 'kube', keyHex: '' };
    const opened = Date.now();
    expect(ears.cluster(ref, 'ns/k', settings, opened).listeningMs).toBe(0);
    // Nothing heard yet: time passing does not count as listening...
    expect(ears.cluster(ref, 'ns/k', settings, opened + 3_000).listeningMs).toBe(0);
    expect(ears.hear(ref, opened + 3_000).listeningMs).toBe(0);
    await new Promise((r) => setTimeout(r, 200));
    await talker.send(
      heartbeatDatagram({ cluster: clusterTag('kube'), node: 'n1', ids: [], counter: 1 }, keyFromHex('')),
    );
    await until(
      () => ears.cluster(ref, 'ns/k', settings).view.nodes.length === 1,
      5_000,
      'the heartbeat heard',
    );
    const heardAt = Date.now();
    // ...from the first datagram on, it does.
    const l = ears.cluster(ref, 'ns/k', settings, heardAt + 2_000).listeningMs;
    expect(l).toBeGreaterThanOrEqual(2_000);
    expect(l).toBeLessThan(2_000 + (heardAt - opened) + 1);
    // A silent air is judged silent after a while: another air where nobody talks.
    const silent = { namespace: 'ns', air: 'silent', port: 7524 };
    const t0 = Date.now();
    expect(ears.cluster(silent, 'ns/q', settings, t0).listeningMs).toBe(0);
    expect(ears.cluster(silent, 'ns/q', settings, t0 + EARS_LIMITS.silentAirMs + 1_000).listeningMs).toBe(
      1_000,
    );
  });
});
