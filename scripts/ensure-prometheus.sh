#!/bin/sh
# Makes Debian's prometheus package (prometheus and promtool) available for
# test/deploy/prometheus.test.ts.
# Best effort: always exits 0; if either is still missing afterwards the
# Prometheus tests skip with one line instead of failing CI.
[ -x /usr/bin/prometheus ] && [ -x /usr/bin/promtool ] && exit 0
export DEBIAN_FRONTEND=noninteractive
if [ "$(id -u)" -ne 0 ]; then
  # Non-root: sudo without a password prompt, or give up quietly.
  SUDO="sudo -n"
else
  SUDO=""
fi
# --no-install-recommends: the recommended node exporter would start a service on the CI host.
# The package lists may be stale or absent on a fresh image: update only if the plain install fails.
$SUDO apt-get install -y -q --no-install-recommends prometheus >/dev/null 2>&1 ||
  { $SUDO apt-get update -q >/dev/null 2>&1 && $SUDO apt-get install -y -q --no-install-recommends prometheus >/dev/null 2>&1; }
if [ -x /usr/bin/prometheus ] && [ -x /usr/bin/promtool ]; then
  echo "ensure-prometheus: installed $(/usr/bin/prometheus --version 2>/dev/null | head -n 1)"
else
  echo "ensure-prometheus: prometheus not installed (the Prometheus tests will skip)"
fi
exit 0
