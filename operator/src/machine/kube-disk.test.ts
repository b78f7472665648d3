import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { findBaseImage } from './base-image.ts';
import { OberonVolume } from './fs/volume.ts';
import { KUBE_MODULES, kubeCacheKey, patchSystemMod, readKubeSources } from './kube-disk.ts';

const baseSystem = async (): Promise<{ base: Buffer; text: string }> => {
  const base = await readFile((await findBaseImage()).path);
  return { base, text: OberonVolume.fromBuffer(base).read('System.Mod').toString('latin1') };
};

describe('the Kube disk recipe', () => {
  it("patches the image's own System.Mod with one Boot.Run call at the end of the body and nothing else", async () => {
    const { text } = await baseSystem();
    const patched = patchSystemMod(text);
    expect(patched.match(/Oberon\.Call\("Boot\.Run", bootRes\);/g)).toHaveLength(1);
    expect(patched).toContain('VAR W: Texts.Writer; bootRes: INTEGER;');
    // The call follows the abort handler, the last statement of the body.
    expect(patched).toMatch(
      /Kernel\.Install\(SYSTEM\.ADR\(Abort\), 0\); Oberon\.Call\("Boot\.Run", bootRes\);\s*END System\./,
    );
    // Only those two places change: removing the additions gives the original back.
    expect(patched.replace(' bootRes: INTEGER;', '').replace(' Oberon.Call("Boot.Run", bootRes);', '')).toBe(
      text,
    );
    expect(patched.includes('\n')).toBe(text.includes('\n')); // line ends kept (CR on the image)
  });

  it('refuses a System.Mod it does not recognise, or one already patched', async () => {
    expect(() => patchSystemMod('MODULE System; END System.')).toThrow(/does not look like/);
    const { text } = await baseSystem();
    expect(() => patchSystemMod(patchSystemMod(text))).toThrow(/already calls Boot\.Run/);
  });

  it('reads every module in compile order, each a MODULE of its file name, with Oberon line ends', async () => {
    const sources = await readKubeSources();
    expect(sources.map((s) => s.name)).toEqual(KUBE_MODULES.map((m) => `${m}.Mod`));
    for (const s of sources) {
      expect(s.text).toMatch(new RegExp(`^MODULE ${s.name.replace('.Mod', '')};`));
      expect(s.text).not.toContain('\n');
    }
  });

  it('keys the cache on the sources, the base image and the builder', async () => {
    const { base } = await baseSystem();
    const sources = await readKubeSources();
    const k = kubeCacheKey(base, sources, 'b1');
    expect(kubeCacheKey(base, sources, 'b1')).toBe(k);
    expect(kubeCacheKey(base, sources, 'b2')).not.toBe(k);
    const edited = sources.map((s, i) => (i === 0 ? { ...s, text: `${s.text} ` } : s));
    expect(kubeCacheKey(base, edited, 'b1')).not.toBe(k);
    const otherBase = Buffer.from(base);
    otherBase[otherBase.length - 1] ^= 1;
    expect(kubeCacheKey(otherBase, sources, 'b1')).not.toBe(k);
  });
});
