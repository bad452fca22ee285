#!/usr/bin/env bash
# Installs Chromium (Debian's chromium package) when missing: the console's
# browser tests (httpapi/console) drive it headless through the DevTools
# protocol. Idempotent and quiet when already installed; a lock keeps two
# concurrent runs (make deps in several worktrees) from racing apt.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "warning: chromium missing and not root: the console's browser tests will fail" >&2; exit 0
  fi
fi
lock="${XDG_CACHE_HOME:-$HOME/.cache}/wimro/chromium.lock"
mkdir -p "$(dirname "$lock")"
exec 9>"$lock"
flock 9
# Another run may have installed it while this one waited for the lock.
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
echo "Installing chromium..."
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=300 chromium >/dev/null
command -v chromium
