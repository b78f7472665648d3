// Test helper: a private copy of the Oberon base image (never run on the shared original).

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const BASE_IMAGE =
  process.env.RETROKUBE_OBERON_BASE ??
  path.resolve(import.meta.dirname, '../../../../shared/oberon/Oberon-2020-08-18.dsk');

const made: string[] = [];

/** Remove every copy made so far (call it from afterAll). */
export function removeCopies(): void {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
}

/** Copy the base image to a fresh temp file (see removeCopies); returns its path. */
export function copyBaseImage(): string {
  if (!fs.existsSync(BASE_IMAGE)) {
    throw new Error(
      `Oberon base image not found at ${BASE_IMAGE}; set RETROKUBE_OBERON_BASE to a copy of Oberon-2020-08-18.dsk`,
    );
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retrokube-test-disk-'));
  made.push(dir);
  const file = path.join(dir, 'Oberon.dsk');
  fs.copyFileSync(BASE_IMAGE, file);
  return file;
}
