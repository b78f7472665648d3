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
FROM deps AS disks
COPY operator ./operator
COPY images ./images
ENV XDG_CACHE_HOME=/app/cache
# Empty: the public URL. Any URL must serve the same bytes (the sha256 is checked either way).
ARG OBERON_BASE_URL=
RUN RETROKUBE_OBERON_BASE_URL="$OBERON_BASE_URL" node operator/src/cli/main.ts disk base && \
  node operator/src/cli/main.ts disk build-kube

# --- runtime ------------------------------------------------------------------------------------
# hack/build-image.sh builds the same /app and config without Docker, reading this stage: keep its
# instructions to ENV, WORKDIR, COPY, USER, ENTRYPOINT and CMD (test/cluster/image.test.ts checks).
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production XDG_CACHE_HOME=/app/cache
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json LICENSE ./
COPY crds ./crds
COPY operator ./operator
COPY images ./images
COPY --from=disks /app/cache/retrokube ./cache/retrokube
# The `node` user (uid 1000) of the official image; the chart runs with runAsUser 1000 too.
USER 1000:1000
ENTRYPOINT ["node", "operator/src/cli/main.ts"]
CMD ["--help"]
