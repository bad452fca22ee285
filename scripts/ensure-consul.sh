#!/usr/bin/env bash
# Builds the Consul agent the coordinator tests run (`consul agent -dev`)
# once, from the Go module proxy, and prints the binary's path. Debian has
# no consul package. The binary is cached outside the repository, under
# ${XDG_CACHE_HOME:-$HOME/.cache}/wimro/consul-<version>/, so a second run
# prints the path at once. The build takes about 10 minutes on 2 cores.
#
# WIMRO_CONSUL_BIN, when set to an executable, is used as it is.
set -euo pipefail
VERSION=1.20.1
if [ -n "${WIMRO_CONSUL_BIN:-}" ] && [ -x "${WIMRO_CONSUL_BIN}" ]; then
  echo "${WIMRO_CONSUL_BIN}"
  exit 0
fi
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/wimro/consul-${VERSION}"
BIN="${CACHE}/consul"
if [ -x "${BIN}" ] && "${BIN}" version 2>/dev/null | grep -q "v${VERSION}"; then
  echo "${BIN}"
  exit 0
fi
GO="${GO:-go}"
mkdir -p "${CACHE}"
# One build at a time: concurrent test packages may all ask for it.
exec 9>"${CACHE}/.lock"
flock 9
if [ -x "${BIN}" ] && "${BIN}" version 2>/dev/null | grep -q "v${VERSION}"; then
  echo "${BIN}"
  exit 0
fi
echo "Building Consul v${VERSION} from the Go module proxy (once; about 10 minutes)..." >&2
WORK="$(mktemp -d)"
trap 'rm -rf "${WORK}"' EXIT
cd "${WORK}"
cat > go.mod <<MOD
module wimro.local/consulbuild

go 1.22
MOD
cat > tools.go <<'SRC'
//go:build tools

package tools

import _ "github.com/hashicorp/consul"
SRC
GOFLAGS=-mod=mod "${GO}" get "github.com/hashicorp/consul@v${VERSION}" >&2
GOFLAGS=-mod=mod "${GO}" build -trimpath -o "${BIN}.tmp" github.com/hashicorp/consul >&2
mv "${BIN}.tmp" "${BIN}"
"${BIN}" version >&2
echo "${BIN}"
