# One image for every role of retrokube (operator, air relay, machine, sheets node, ...):
#   docker build -t retrokube .   then   docker run retrokube operator --help
# Node 24 runs the TypeScript sources directly (type stripping), so there is no build step.

# --- deps: production dependencies only --------------------------------------------------------
FROM node:24-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# --omit=dev drops vitest, typescript, biome and the npm `node` package used in development;
# --ignore-scripts: no install scripts run at build time.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# --- runtime ------------------------------------------------------------------------------------
FROM node:24-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json LICENSE ./
COPY crds ./crds
COPY operator ./operator
# The `node` user (uid 1000) of the official image; the chart runs with runAsUser 1000 too.
USER 1000:1000
ENTRYPOINT ["node", "operator/src/cli/main.ts"]
CMD ["--help"]
