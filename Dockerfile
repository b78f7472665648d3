# One image for every role of retrokube (operator, air relay, machine, sheets node, ...):
#   docker build -t retrokube .   then   docker run retrokube operator --help
# Node 24 runs the TypeScript sources directly (type stripping), so there is no build step.

# Where there is no registry, the same recipe takes a base made locally and a local copy of the
# Oberon base disk (both as build arguments; see hack/build-dockerfile.sh):
#   buildah build --build-arg NODE_IMAGE=localhost/node-base:24 \
#     --build-arg OBERON_BASE_URL=http://127.0.0.1:PORT/Oberon-2020-08-18.dsk --network host .
ARG NODE_IMAGE=node:24-slim

# --- deps: production dependencies only --------------------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# --omit=dev drops vitest, typescript, biome and the npm `node` package used in development;
# --ignore-scripts: no install scripts run at build time.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# --- disks: the base image (downloaded, sha256 checked) and the prebuilt Kube disk -----------------
# A machine pod's seed container then finds both in the image: no network and no compile at run time.
# Only what builds them is copied in — the emulator and the disk builder (operator/src/machine), the
# two util modules they import, our Oberon sources — so a change anywhere else in operator/ leaves
# this stage a cached layer (ORP compiling Kube in the emulator takes seconds, the COPYs less);
# a module they import that is not copied fails the build here.
FROM deps AS disks
COPY operator/src/machine ./operator/src/machine
COPY operator/src/util/log.ts operator/src/util/cli-name.ts ./operator/src/util/
COPY images/oberon ./images/oberon
ENV XDG_CACHE_HOME=/app/cache
# Empty: the public URL. Any URL must serve the same bytes (the sha256 is checked either way).
ARG OBERON_BASE_URL=
# No translator hints (operator/src/machine/jit-hints.ts): they are a per-user cache of what one
# build's emulator happened to translate, not part of the product (the disks are the same either way).
RUN RETROKUBE_JIT_HINTS=off RETROKUBE_OBERON_BASE_URL="$OBERON_BASE_URL" node --input-type=module -e ' \
  import { findBaseImage } from "./operator/src/machine/base-image.ts"; \
  import { buildKubeDisk } from "./operator/src/machine/kube-disk.ts"; \
  console.log((await findBaseImage()).path, (await buildKubeDisk()).cachePath);'

# --- compile-cache: the operator's modules type-stripped and compiled, for its first start ---------
# Node's compile cache (NODE_COMPILE_CACHE) filled by the image's own Node, as the image's user, for
# the files the runtime stage holds at the same paths (operator/bin/bake-compile-cache.js loads what
# `retrokube operator` loads until it has started, and starts nothing). Node uses an entry only under
# its own version, V8 flags and uid and while the module's source hash matches, so a cache from
# another build is never used wrongly; portable: keyed by paths relative to the cache folder (made
# at /app all the same: an entry keeps the path its stack traces name). Node writes its files 0600:
# made readable here, as the runtime stage copies them as root.
FROM deps AS compile-cache
ENV NODE_ENV=production XDG_CACHE_HOME=/app/cache NODE_COMPILE_CACHE=/app/cache/retrokube/compile-cache NODE_COMPILE_CACHE_PORTABLE=1
RUN mkdir -p "$NODE_COMPILE_CACHE" && chown 1000:1000 "$NODE_COMPILE_CACHE"
COPY package.json LICENSE ./
COPY crds ./crds
COPY images ./images
COPY operator ./operator
USER 1000:1000
RUN node operator/bin/bake-compile-cache.js && chmod -R a+rX,go-w "$NODE_COMPILE_CACHE"

# --- runtime ------------------------------------------------------------------------------------
# hack/build-image.sh builds the same /app and config without Docker, reading this stage: keep its
# instructions to ENV, WORKDIR, COPY, USER, ENTRYPOINT and CMD (test/cluster/image.test.ts checks).
# The sources come last: after a change there, a build with a layer cache (docker build, buildah
# --layers) reuses every layer above, copies operator/ again and bakes its compile cache again.
FROM ${NODE_IMAGE} AS runtime
# The compile cache (stage above) is read-only in the pod (readOnlyRootFilesystem): Node reads it and
# silently writes nothing there (a module it lacks is compiled as without a cache).
ENV NODE_ENV=production XDG_CACHE_HOME=/app/cache NODE_COMPILE_CACHE=/app/cache/retrokube/compile-cache NODE_COMPILE_CACHE_PORTABLE=1
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json LICENSE ./
COPY crds ./crds
COPY images ./images
COPY --from=disks /app/cache/retrokube ./cache/retrokube
COPY operator ./operator
COPY --from=compile-cache /app/cache/retrokube/compile-cache ./cache/retrokube/compile-cache
# The `node` user (uid 1000) of the official image; the chart runs with runAsUser 1000 too.
USER 1000:1000
ENTRYPOINT ["node", "operator/src/cli/main.ts"]
CMD ["--help"]
