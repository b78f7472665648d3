// Secrets given to a command: from a file or the environment, not from argv — every user on the
// host reads argv in `ps`. A flag value still works (the reference tools take one) with a warning.
import { readFileSync } from 'node:fs';

export const LIMITS = {
  fileBytes: 64 * 1024, // a token or key file is one short line; a bigger file is the wrong file
} as const;

/** The first line of a secret file, without its newline; a clear error for a missing or empty file. */
export function readSecretFile(file: string, what: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`cannot read the ${what} file ${file}: ${(e as Error).message}`);
  }
  if (text.length > LIMITS.fileBytes)
    throw new Error(`the ${what} file ${file} is larger than ${LIMITS.fileBytes} bytes`);
  const value = (text.split(/\r?\n/)[0] ?? '').trim();
  if (!value) throw new Error(`the ${what} file ${file} is empty: put the ${what} on its first line`);
  return value;
}

export interface SecretSources {
  what: string; // "token", "signing key"
  flag: string; // "--token"
  env: string; // "TOKEN"
  fromFlag?: string; // value given on the command line
  file?: string; // value of --<flag>-file
  envValue?: string;
  warn?: (line: string) => void;
}

/**
 * A secret from, in order: `--x-file`, the `--x` flag (warned: visible in ps), the environment.
 * Undefined when none is given (the caller picks its default).
 */
export function resolveSecret(s: SecretSources): string | undefined {
  if (s.file !== undefined) {
    if (s.fromFlag !== undefined) throw new Error(`give ${s.flag} or ${s.flag}-file, not both`);
    return readSecretFile(s.file, s.what);
  }
  if (s.fromFlag !== undefined) {
    s.warn?.(
      `warning: ${s.flag} on the command line is visible to every user of this host (ps); use ${s.env}=… or ${s.flag}-file FILE\n`,
    );
    return s.fromFlag;
  }
  return s.envValue || undefined;
}
