#!/usr/bin/env bash
# Installs yanglint (Debian's libyang2-tools) when missing: the IETF L2VPN
# connector's tests validate every body it sends against the RFC 8466 YANG
# module with it, and the TAPI emulator every body and answer against ONF's
# TAPI 2.1.3 and 2.4.1 modules. Idempotent and quiet when already installed.
set -euo pipefail
if command -v yanglint >/dev/null 2>&1; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "warning: yanglint missing and not root: the YANG validation tests will skip or fail" >&2; exit 0
  fi
fi
echo "Installing yanglint (libyang2-tools)..."
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends libyang2-tools >/dev/null
command -v yanglint
