import { describe, expect, it } from 'vitest';
import { KubeClient, type ResourceType } from './client.ts';
import type { ControllerDefinition } from './controller.ts';
import { Manager } from './manager.ts';
import { MANAGED_SELECTOR } from './objects.ts';
import { offlineKubeConfig, THING } from './offline.testkit.ts';

// Nothing listens there: the manager is never started, so no informer reaches the network.
const manager = () => new Manager({ client: new KubeClient(offlineKubeConfig()) });

const OWNER: ResourceType = { ...THING, plural: 'owners', kind: 'Owner' };

const def = (name: string, primary: ResourceType, more: Partial<ControllerDefinition> = {}) =>
  ({ name, primary, owns: [], reconcile: async () => undefined, ...more }) as ControllerDefinition;

describe('Manager informers', () => {
  it('gives an owned kind that is another controller’s primary that primary’s informer (one cache)', () => {
    const mgr = manager();
    const things = mgr.add(def('things', THING));
    const owners = mgr.add(def('owners', OWNER, { owns: [THING] }));
    const [thingsPrimary] = things.informers;
    const ownedThings = owners.informers.find((i) => i.opts.type.plural === THING.plural);
    expect(ownedThings).toBe(thingsPrimary);
    expect(ownedThings?.opts.labelSelector).toBeUndefined(); // every Thing, the primary's view
  });

  it('keeps an owned kind on its own managed-only informer when no controller has it as primary', () => {
    const mgr = manager();
    const owners = mgr.add(def('owners', OWNER, { owns: [THING] }));
    const ownedThings = owners.informers.find((i) => i.opts.type.plural === THING.plural);
    expect(ownedThings?.opts.labelSelector).toBe(MANAGED_SELECTOR);
    // A later primary of the kind gets an informer of its own: the owner's is already handed out.
    const things = mgr.add(def('things', THING));
    expect(things.informers[0]).not.toBe(ownedThings);
    expect(things.informers[0]?.opts.labelSelector).toBeUndefined();
  });

  it('keeps a filtered watch of a primary kind apart (its cache holds only what the filter keeps)', () => {
    const mgr = manager();
    const things = mgr.add(def('things', THING));
    const keep = () => true;
    const owners = mgr.add(
      def('owners', OWNER, {
        watches: [{ type: THING, managedOnly: true, filter: { id: 'some', keep }, map: () => [] }],
      }),
    );
    const watched = owners.informers.find((i) => i.opts.type.plural === THING.plural);
    expect(watched).not.toBe(things.informers[0]);
    expect(watched?.opts.keep).toBe(keep);
  });
});
