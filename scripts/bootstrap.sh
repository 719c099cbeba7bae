#!/bin/sh
# Bootstraps the toolchain, then runs the command given as arguments with it.
#
# Why by hand: the README's two commands must work on a machine that has only
# an older Node and npm. This script installs, only when missing:
#   1. Node.js 24 (the npm registry's `node` package) when the system Node is older;
#   2. pnpm at the version pinned in package.json's `packageManager`;
#   3. the workspace's dependencies (pnpm install --frozen-lockfile);
#   4. Studio's build (packages/studio/dist), when it is missing or older than
#      its sources: the gateway serves it at / and the tests drive it.
# A second run finds all four in place and installs or builds nothing.
set -eu

root=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
cd "$root"

say() { printf '[bootstrap] %s\n' "$*" >&2; }

required_major=24
node_pin=$(sed -n 's/.*"node": "\([0-9.]*\)".*/\1/p' .toolchain/node/package.json)
pnpm_pin=$(sed -n 's/.*"packageManager": "pnpm@\([0-9.]*\)".*/\1/p' package.json)

# 1. Node
system_major=0
if command -v node >/dev/null 2>&1; then
  system_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
fi
if [ "$system_major" -ge "$required_major" ]; then
  node_bin_dir=$(dirname "$(command -v node)")
else
  node_bin_dir="$root/.toolchain/node/node_modules/.bin"
  if [ "$("$node_bin_dir/node" -v 2>/dev/null || true)" != "v$node_pin" ]; then
    command -v npm >/dev/null 2>&1 || { say "npm is required to install Node $node_pin; install Node.js with npm first"; exit 1; }
    say "system Node is $(node -v 2>/dev/null || echo missing); installing Node $node_pin from the npm registry into .toolchain/node"
    npm ci --prefix .toolchain/node --no-audit --no-fund --loglevel=error >&2
  fi
fi
PATH="$node_bin_dir:$PATH"

# 2. pnpm (run by the Node chosen above)
pnpm_dir="$root/.toolchain/pnpm/node_modules/.bin"
if [ "$("$pnpm_dir/pnpm" -v 2>/dev/null || true)" != "$pnpm_pin" ]; then
  grep -q "\"pnpm\": \"$pnpm_pin\"" .toolchain/pnpm/package.json || {
    say "package.json pins pnpm@$pnpm_pin but .toolchain/pnpm/package.json pins another version; make them agree"
    exit 1
  }
  say "installing pnpm $pnpm_pin into .toolchain/pnpm"
  npm ci --prefix .toolchain/pnpm --no-audit --no-fund --loglevel=error >&2
fi
PATH="$pnpm_dir:$PATH"
export PATH

# 3. Dependencies: pnpm keeps a copy of the lockfile it installed in node_modules/.pnpm.
if ! cmp -s pnpm-lock.yaml node_modules/.pnpm/lock.yaml; then
  say "installing dependencies"
  pnpm install --frozen-lockfile --reporter=append-only >&2
fi

# 4. Studio: dist/ is git-ignored, so a fresh clone builds it here.
studio=packages/studio
if [ ! -f "$studio/dist/index.html" ] || [ -n "$(find "$studio/src" "$studio/public" "$studio/index.html" "$studio/vite.config.ts" \
  "$studio/package.json" pnpm-lock.yaml -newer "$studio/dist/index.html" -print 2>/dev/null | head -n 1)" ]; then
  say "building Studio (packages/studio/dist)"
  pnpm --filter @janus/studio run build >&2
fi

[ "$#" -gt 0 ] || exit 0
exec "$@"
