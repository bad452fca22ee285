#!/usr/bin/env bash
# Installs lintian (Debian's package checker) when missing: the packaging
# test runs it on the .deb that `make package` builds, and fails on any
# error or warning it reports. Idempotent and quiet when installed.
set -euo pipefail
if command -v lintian >/dev/null 2>&1; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "warning: lintian missing and not root: the package test will fail until it is installed" >&2; exit 0
  fi
fi
exec 9>"${TMPDIR:-/tmp}/wimro-ensure-lintian.lock"
flock 9
command -v lintian >/dev/null 2>&1 && exit 0
echo "Installing lintian..."
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends lintian >/dev/null
command -v lintian
