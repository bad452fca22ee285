#!/usr/bin/env bash
# Installs systemd-analyze (Debian's systemd package) when missing: a test
# runs `systemd-analyze verify` on contrib/wimd.service. Installing the
# package starts nothing; verify needs no running systemd. Idempotent and
# quiet when already installed.
set -euo pipefail
if command -v systemd-analyze >/dev/null 2>&1; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "warning: systemd-analyze missing and not root: the unit file test will not run (it fails under CI)" >&2; exit 0
  fi
fi
echo "Installing systemd-analyze (systemd)..."
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends systemd >/dev/null
command -v systemd-analyze
