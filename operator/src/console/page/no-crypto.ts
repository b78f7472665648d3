// node:crypto in the page: the emulator hashes only for boot images and state digests, which the
// browser lab does not use. esbuild maps node:crypto here, so a call says what is missing instead
// of the page failing to load.
export function createHash(_algorithm: string): never {
  throw new Error('boot images and state digests need node:crypto and are not available in the browser lab');
}
