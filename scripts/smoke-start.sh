#!/usr/bin/env bash
# `npm start` smoke check for CI: starts the relay on ephemeral ports with a
# fresh data directory, waits for "txrelay listening", asks GET /ping for
# "pong", prints the acceptor line, and stops it with SIGTERM (graceful drain).
set -euo pipefail
data="$(mktemp -d "${TMPDIR:-/tmp}/txrelay-smoke-XXXXXX")"
log="$data/serve.log"
TXRELAY_HTTP_PORT=0 TXRELAY_ADMIN_PORT=0 TXRELAY_UDP_PORT=0 TXRELAY_STORAGE_DATA_DIR="$data/store" \
  setsid npm start >"$log" 2>&1 &
pid=$!
stop() { kill -TERM -- "-$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$data"; }
trap stop EXIT
for _ in $(seq 120); do
  grep -q '"msg":"txrelay listening"' "$log" && break
  kill -0 "$pid" 2>/dev/null || { cat "$log"; echo "smoke: npm start exited"; exit 1; }
  sleep 0.5
done
port="$(grep '"msg":"txrelay listening"' "$log" | sed -E 's/.*"http":"[^"]*:([0-9]+)".*/\1/')"
[ -n "$port" ] || { cat "$log"; echo "smoke: no listening line"; exit 1; }
grep -o '"msg":"HTTP acceptor: [^"]*' "$log" | cut -c8-
answer="$(curl -s --max-time 5 "http://127.0.0.1:$port/ping")"
[ "$answer" = "pong" ] || { cat "$log"; echo "smoke: GET /ping answered '$answer'"; exit 1; }
echo "smoke: npm start on Node $(node --version) answers GET /ping"
