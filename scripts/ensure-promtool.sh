#!/usr/bin/env bash
# Installs promtool (Debian's prometheus package) when missing: `make test`
# checks contrib/prometheus/alerts.yml with `promtool check rules`, runs its
# unit tests (`promtool test rules`) and parses every expression of the
# Grafana dashboard with it. The package's server is kept from starting
# (policy-rc.d, as scripts/ensure-postgres.sh does): only the tool is used.
# Idempotent and quiet when already installed.
set -euo pipefail
if command -v promtool >/dev/null 2>&1; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "warning: promtool missing and not root: the alert and dashboard tests will not run (they fail under CI)" >&2; exit 0
  fi
fi
echo "Installing promtool (prometheus)..."
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod +x /usr/sbin/policy-rc.d
  trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=300 prometheus >/dev/null
command -v promtool
