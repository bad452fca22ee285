#!/usr/bin/env bash
# Makes sure PostgreSQL server binaries are on this machine: wimd (with no
# database URL) and the test harness start their own server from them.
# Installs Debian's postgresql package when none are found; does not start
# the Debian cluster. Idempotent and quiet when already installed.
set -euo pipefail

find_bindir() {
  if [ -n "${WIMRO_PG_BINDIR:-}" ] && [ -x "$WIMRO_PG_BINDIR/postgres" ] && [ -x "$WIMRO_PG_BINDIR/initdb" ]; then
    echo "$WIMRO_PG_BINDIR"; return 0
  fi
  if p=$(command -v postgres 2>/dev/null); then
    d=$(dirname "$(readlink -f "$p")")
    if [ -x "$d/initdb" ]; then echo "$d"; return 0; fi
  fi
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n -r); do
    if [ -x "$d/postgres" ] && [ -x "$d/initdb" ]; then echo "$d"; return 0; fi
  done
  return 1
}

if dir=$(find_bindir); then
  echo "PostgreSQL binaries: $dir"
  exit 0
fi

echo "No PostgreSQL server binaries found; installing Debian's postgresql package..."
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "error: not root and no sudo: install the postgresql package by hand" >&2; exit 1
  fi
fi
# Keep the package from starting its own cluster: wimro runs its own.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod +x /usr/sbin/policy-rc.d
  trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends postgresql >/dev/null
dir=$(find_bindir) || { echo "error: postgresql installed but its binaries were not found" >&2; exit 1; }
echo "PostgreSQL binaries: $dir"
