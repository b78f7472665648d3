// The cluster key in a machine's boot commands. In a pod the commands carry the reference
// $(RK_KEY) literally (the renderer escapes it from the kubelet) and `machine run` puts the key
// from the environment in its place — only after checking it is 0–16 hex digits. The key comes
// from a Secret a user named (keySecretRef): a value such as "00;System.Something" would otherwise
// add commands to the machine's boot line.

export const KEY_ENV = 'RK_KEY';
export const KEY_REFERENCE = `$(${KEY_ENV})`;
const KEY_HEX = /^[0-9a-fA-F]{0,16}$/;

export function isKeyHex(key: string): boolean {
  return KEY_HEX.test(key);
}

/** `commands` with every $(RK_KEY) replaced by the key from `env`; throws for a key that is not hex. */
export function expandKeyReference(commands: string, env: NodeJS.ProcessEnv = process.env): string {
  if (!commands.includes(KEY_REFERENCE)) return commands;
  const key = (env[KEY_ENV] ?? '').trim();
  if (!isKeyHex(key))
    throw new Error(
      `the key in $${KEY_ENV} (from the Secret named by keySecretRef) is not 0-16 hex digits; put only hex digits in that Secret entry`,
    );
  return commands.replaceAll(KEY_REFERENCE, key.toLowerCase());
}
