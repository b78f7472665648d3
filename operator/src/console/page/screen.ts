// A machine screen on a canvas: draws what a ScreenLink delivers and sends the canvas's keyboard
// and mouse back through it. Oberon has three mouse buttons; on a two-button mouse, Alt + left is
// the middle button (Oberon's "execute").

import { OBERON_PALETTE } from '../../machine/palette.ts';
import type { ScreenLink } from './backend.ts';
import { keysymOf, rfbMask } from './keys.ts';

export function wireInput(canvas: HTMLCanvasElement, link: () => ScreenLink | null): void {
  canvas.tabIndex = 0;
  const pos = (e: MouseEvent): [number, number] => {
    const r = canvas.getBoundingClientRect();
    const x = Math.round(((e.clientX - r.left) / r.width) * canvas.width);
    const y = Math.round(((e.clientY - r.top) / r.height) * canvas.height);
    return [Math.max(0, Math.min(canvas.width - 1, x)), Math.max(0, Math.min(canvas.height - 1, y))];
  };
  const mask = (e: MouseEvent): number => {
    const m = rfbMask(e.buttons);
    return e.altKey && m & 1 ? (m & ~1) | 2 : m;
  };
  const mouse = (e: MouseEvent): void => {
    const [x, y] = pos(e);
    link()?.pointer(x, y, mask(e));
    e.preventDefault();
  };
  canvas.addEventListener('mousemove', mouse);
  canvas.addEventListener('mousedown', (e) => {
    canvas.focus();
    mouse(e);
  });
  canvas.addEventListener('mouseup', mouse);
  canvas.addEventListener('contextmenu', (e) => e.preventDefault());
  const key = (down: boolean) => (e: KeyboardEvent) => {
    const k = keysymOf(e.key, e.code);
    if (k === undefined) return;
    link()?.key(k, down);
    e.preventDefault();
  };
  canvas.addEventListener('keydown', key(true));
  canvas.addEventListener('keyup', key(false));
}

/** Draws a 1-bpp Oberon frame (bottom line first, bit 0 leftmost) onto the canvas. */
export function drawOberonFrame(
  ctx: CanvasRenderingContext2D,
  image: ImageData,
  words: Uint32Array,
  width: number,
  height: number,
): void {
  const px = new Uint32Array(image.data.buffer);
  const stride = width / 32;
  // The colours the console's screens (RFB) and snapshots show, opaque, as ABGR words in
  // little-endian memory.
  const abgr = (rgb: number): number =>
    (0xff000000 | ((rgb & 0xff) << 16) | (rgb & 0xff00) | ((rgb >>> 16) & 0xff)) >>> 0;
  const fg = abgr(OBERON_PALETTE.foreground);
  const bg = abgr(OBERON_PALETTE.background);
  for (let line = 0; line < height; line++) {
    const out = (height - 1 - line) * width;
    const row = line * stride;
    for (let w = 0; w < stride; w++) {
      const word = words[row + w];
      const base = out + w * 32;
      for (let b = 0; b < 32; b++) px[base + b] = (word >>> b) & 1 ? fg : bg;
    }
  }
  ctx.putImageData(image, 0, 0);
}

/**
 * The screen's size on the page: it fits its frame (scaled down, smoothed, the scale said in
 * `label`), or the button shows it pixel for pixel (scrolled inside its frame when the window is
 * narrower). The label follows every resize of the window and every new screen size from RFB.
 */
export function wireZoom(canvas: HTMLCanvasElement, button: HTMLButtonElement, label: HTMLElement): void {
  const say = (): void => {
    const shown = canvas.getBoundingClientRect().width;
    if (!shown || !canvas.width) return;
    const pct = Math.round((100 * shown) / canvas.width);
    const oneToOne = canvas.classList.contains('one-to-one');
    const box = canvas.parentElement;
    const scrolled = oneToOne && box !== null && box.scrollWidth > box.clientWidth + 1;
    label.textContent = oneToOne ? `1:1${scrolled ? ', scroll inside the frame' : ''}` : `shown at ${pct} %`;
    label.dataset.percent = String(pct);
  };
  button.onclick = () => {
    const big = !canvas.classList.contains('one-to-one');
    canvas.classList.toggle('one-to-one', big);
    canvas.style.width = big ? `${canvas.width}px` : '';
    button.textContent = big ? 'fit' : '1:1';
    say();
  };
  const watch = new ResizeObserver(say);
  watch.observe(canvas);
  if (canvas.parentElement) watch.observe(canvas.parentElement);
}
