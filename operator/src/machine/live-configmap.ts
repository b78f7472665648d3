// The live commands of a plane's pod, read through the Kubernetes API instead of a mounted volume:
// a kubelet refreshes a ConfigMap volume only at its periodic sync (about a minute), a watch hears
// an edit at once. The pod's ServiceAccount may get, list and watch this one ConfigMap and nothing
// else (a Role with resourceNames, rendered by the operator); a watch restricted by resourceNames
// must ask for that name with a metadata.name field selector, which this does.
//
// Level-triggered, full state: every (re)start of the watch begins with a GET of the whole
// ConfigMap, every event carries the whole object, and the feeder sends only what changed.
import { ApiError, CORE, type KubeClient, type KubeObject } from '../runtime/client.ts';
import { liveFeeder } from './live-commands.ts';

export const LIVE_API_LIMITS = {
  retryMs: 2_000, // after an error (API server away, not yet allowed): try again this soon
  watchSeconds: 300, // the server ends a watch after this long; it is renewed with a fresh GET
} as const;

export interface LiveConfigMapOptions {
  client: KubeClient;
  namespace: string;
  name: string;
  key: string;
  feed(text: string): void;
  warn(message: string): void;
}

type ConfigMap = KubeObject & { data?: Record<string, string> };

/** Follows the ConfigMap until stop(); each reading of its entry goes to the feeder. */
export function watchLiveConfigMap(o: LiveConfigMapOptions): { stop(): void; done: Promise<void> } {
  const where = `ConfigMap ${o.namespace}/${o.name} entry ${o.key}`;
  const feeder = liveFeeder({ where, feed: o.feed, warn: o.warn });
  let stopped = false;
  let abort: (() => void) | undefined;
  let wake: (() => void) | undefined;
  const pause = (ms: number) =>
    new Promise<void>((r) => {
      const t = setTimeout(r, ms);
      wake = () => {
        clearTimeout(t);
        r();
      };
    });
  const offer = (cm: ConfigMap | undefined) => {
    const text = cm?.data?.[o.key];
    if (text === undefined) feeder.problem(`${where} does not exist yet; waiting`);
    else feeder.offer(text);
  };
  const loop = async () => {
    while (!stopped) {
      try {
        const cm = await o.client.getOrUndefined<ConfigMap>(CORE.configMap, o.namespace, o.name);
        offer(cm);
        const h = await o.client.stream(
          `/api/v1/namespaces/${o.namespace}/configmaps`,
          {
            watch: 'true',
            fieldSelector: `metadata.name=${o.name}`,
            timeoutSeconds: LIVE_API_LIMITS.watchSeconds,
            ...(cm?.metadata.resourceVersion ? { resourceVersion: cm.metadata.resourceVersion } : {}),
          },
          (ev) => {
            const e = ev as { type?: string; object?: ConfigMap };
            if (e.type === 'ADDED' || e.type === 'MODIFIED') offer(e.object);
            // DELETED: the operator writes it again; what the plane has stays until then.
          },
        );
        abort = () => h.abort();
        if (stopped) h.abort();
        await h.done;
      } catch (err) {
        if (stopped) break;
        const why =
          err instanceof ApiError && err.status === 403
            ? `not allowed to read ${where} (the pod's ServiceAccount needs the Role the operator renders): ${err.message}`
            : `${where}: ${(err as Error).message}`;
        feeder.problem(why);
        await pause(LIVE_API_LIMITS.retryMs);
      }
    }
  };
  const done = loop();
  return {
    stop: () => {
      stopped = true;
      abort?.();
      wake?.();
    },
    done,
  };
}
