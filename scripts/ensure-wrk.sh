#!/bin/sh
# Makes Debian's wrk available for the benchmark harnesses' smoke runs
# (npm run test:bench) and the bench scripts.
# Best effort: always exits 0; if it is still missing afterwards the smoke runs
# that need it skip with one line instead of failing CI.
command -v wrk >/dev/null 2>&1 && exit 0
export DEBIAN_FRONTEND=noninteractive
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo -n"
else
  SUDO=""
fi
# The package lists may be stale or absent on a fresh image: update only if the plain install fails.
$SUDO apt-get install -y -q --no-install-recommends wrk >/dev/null 2>&1 ||
  { $SUDO apt-get update -q >/dev/null 2>&1 && $SUDO apt-get install -y -q --no-install-recommends wrk >/dev/null 2>&1; }
if command -v wrk >/dev/null 2>&1; then
  echo "ensure-wrk: installed $(wrk --version 2>&1 | head -n 1)"
else
  echo "ensure-wrk: wrk not installed (the smoke runs that need it will skip)"
fi
exit 0
