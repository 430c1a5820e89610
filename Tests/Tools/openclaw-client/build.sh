#!/usr/bin/env bash
# Bundles OpenClaw's own gateway client (src/gateway/client.ts, `GatewayClient`) into one CommonJS
# file for Node 20, from an OpenClaw source tree that is NOT part of this repository:
#   Tests/Tools/openclaw-client/build.sh OPENCLAW_GIT_DIR OUT.js
# Five files it cannot load here are replaced by lanbridge's stubs (stubs/); the other fifteen are
# OpenClaw's, unchanged. Needs Debian's esbuild, node-ws and node-ipaddr.js. Nothing it builds is committed.
set -euo pipefail
source_dir=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
if git -C "$source_dir" rev-parse --git-dir >/dev/null 2>&1; then
  git -C "$source_dir" archive HEAD -- src | tar -x -C "$tree"
else
  cp -r "$source_dir/src" "$tree/src"
fi
cp -r "$here/stubs/src/." "$tree/src/"
esbuild "$tree/src/gateway/client.ts" --bundle --platform=node --format=cjs --target=node20 --log-level=warning \
  --external:ws --external:ipaddr.js --outfile="$out"
