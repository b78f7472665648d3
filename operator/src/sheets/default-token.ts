/**
 * The reference's well-known default token (spec §1.1). Servers warn when they run with it and
 * clients fall back to it, so both sides must agree on this one value.
 */
export const DEFAULT_TOKEN = 'CHANGE_ME_super_secret';
