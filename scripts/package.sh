#!/usr/bin/env bash
# Builds wimro's packages without Docker (`make package`):
#   OUT/wimro_VERSION_ARCH.deb  Debian package (nfpm): wimd and openmano in
#                               /usr/bin, wimd.service, /etc/wimro/wimd.env,
#                               the system user wimro and /var/lib/wimro
#   OUT/wimd-image/             OCI image layout of wimd (empty base, static
#   OUT/wimd-image.tar          binary, non-root), and its oci-archive
# Usage: scripts/package.sh [OUT [VERSION]]; OUT defaults to bin, VERSION to
# git describe. nfpm is run at a pinned version from the Go module proxy
# (not a dependency of the module), like staticcheck.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
GO=${GO:-go}
NFPM=${NFPM:-github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2}
OUT=${1:-bin}
VERSION=${2:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# Dates in the packages: the commit's, so that a rebuild gives the same bytes.
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH

# Static binaries: they run on any distribution and from an empty image;
# stripped (-s -w), as Debian wants its binaries.
CGO_ENABLED=0 $GO build -trimpath -ldflags "-s -w -X main.version=$VERSION" -o "$stage/bin/" ./cmd/wimd ./cmd/openmano

# A Debian version starts with a digit and, native, has no '-':
# v1.2.3 -> 1.2.3, v1.2.3-4-gabc -> 1.2.3+4+gabc, abc1234-dirty -> 0.0~gitabc1234+dirty.
case "$VERSION" in
v[0-9]*) deb_version=${VERSION#v} ;;
[0-9]*) deb_version=$VERSION ;;
*) deb_version=0.0~git$VERSION ;;
esac
deb_version=$(printf '%s' "$deb_version" | tr -c 'A-Za-z0-9.+~' '+')
deb_arch=$($GO env GOARCH)

# The unit runs the packaged binary.
sed 's#/usr/local/bin/wimd#/usr/bin/wimd#g' contrib/wimd.service >"$stage/wimd.service"

# Manual pages: each binary's own help, so that they never disagree.
date_text=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)
manpage() { # name summary help-command...
	local name=$1 summary=$2
	shift 2
	{
		printf '.TH %s 1 "%s" "wimro %s" "User Commands"\n' "${name^^}" "$date_text" "$VERSION"
		printf '.SH NAME\n%s \\- %s\n' "$name" "$summary"
		printf '.SH DESCRIPTION\n.nf\n'
		"$@" 2>&1 | sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
		printf '.fi\n.SH SEE ALSO\n'
		printf 'https://github.com/wimro/wimro (README.md and docs/: configuration, operations, the openmano CLI)\n'
	} | gzip -9n >"$stage/$name.1.gz"
}
manpage wimd "the wimro WAN Infrastructure Manager daemon" sh -c "'$stage/bin/wimd' help; echo; '$stage/bin/wimd' serve -h"
manpage openmano "command line client of wimd (openmano-compatible REST API)" "$stage/bin/openmano" help

# A native package's changelog: one entry, this build.
{
	printf 'wimro (%s) unstable; urgency=medium\n\n' "$deb_version"
	printf '  * Built from %s by make package.\n\n' "$(git rev-parse --short HEAD 2>/dev/null || echo "$VERSION")"
	printf ' -- wimro developers <wimro@users.noreply.github.com>  %s\n' "$(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n >"$stage/changelog.gz"

sed -e "s#\${DEB_ARCH}#$deb_arch#g" -e "s#\${DEB_VERSION}#$deb_version#g" \
	-e "s#\${PKG_BIN}#$stage/bin#g" -e "s#\${PKG_STAGE}#$stage#g" packaging/nfpm.yaml >"$stage/nfpm.yaml"
deb="$OUT/wimro_${deb_version}_${deb_arch}.deb"
$GO run "$NFPM" package --config "$stage/nfpm.yaml" --packager deb --target "$deb" >/dev/null
echo "$deb"

$GO run ./internal/ociimage/wimdimage -wimd "$stage/bin/wimd" -out "$OUT/wimd-image" -tar "$OUT/wimd-image.tar" \
	-version "$VERSION" -revision "$(git rev-parse HEAD 2>/dev/null || true)"
echo "$OUT/wimd-image ($OUT/wimd-image.tar)"
