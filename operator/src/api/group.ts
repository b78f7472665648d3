// The API group and version of every retrokube kind.
// Apart from the TypeBox schema in schema.ts (which re-exports them): the operator's controllers
// import these, and TypeBox (218 modules, 10-20 MiB of RSS) is for the CRD generator and the CLI,
// not for a reconcile (#32; operator/src/cli/startup.test.ts keeps it so).
export const GROUP = 'retrokube.io';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
