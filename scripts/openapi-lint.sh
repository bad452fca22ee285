#!/bin/sh
# openapi-lint.sh lints wimd's OpenAPI document (the one /openapi.json
# serves, printed without a database) with a pinned @redocly/cli and its
# recommended rules. Any error fails; warnings are printed. npx (Node 20.19
# or later) is required: missing, the lint fails rather than pass unseen.
# npm's downloads are cached outside the repo (WIMRO_NPM_CACHE).
set -eu

REDOCLY_CLI=@redocly/cli@2.77.0
GO=${GO:-go}
cd "$(dirname "$0")/.."

if ! command -v npx >/dev/null 2>&1; then
	echo "openapi-lint: npx not found: install Node.js 20.19+ and npm (apt-get install nodejs npm)" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$GO run ./httpapi/internal/openapiprint >"$tmp/openapi.json"

export npm_config_cache="${WIMRO_NPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/wimro/npm}"
export npm_config_update_notifier=false REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true
# Run from the temporary folder so that no redocly.yaml of the caller's
# tree changes the rules.
cd "$tmp"
npx --yes "$REDOCLY_CLI" lint --format=stylish openapi.json
