#!/bin/sh
# vendor.sh fetches the console's one library, uPlot, at a pinned version
# from the npm registry, checks the tarball against its pinned SHA-512
# (the registry's "integrity"), and copies the browser build, its style
# sheet and its licence into assets/vendor/. Run it from anywhere; it
# needs npm, tar, openssl and base64. The files it writes are committed: the
# build never fetches anything.
set -eu
VERSION=1.6.32
INTEGRITY=sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw==

here=$(cd "$(dirname "$0")" && pwd)
out="$here/assets/vendor"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent "uplot@$VERSION" >/dev/null)
tgz="$tmp/uplot-$VERSION.tgz"
got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
if [ "$got" != "$INTEGRITY" ]; then
	echo "uplot-$VERSION.tgz: checksum $got, want $INTEGRITY" >&2
	exit 1
fi
tar -xzf "$tgz" -C "$tmp"
mkdir -p "$out"
cp "$tmp/package/dist/uPlot.iife.min.js" "$out/uPlot.iife.min.js"
cp "$tmp/package/dist/uPlot.min.css" "$out/uPlot.min.css"
cp "$tmp/package/LICENSE" "$out/uPlot.LICENSE"
printf 'uPlot %s (MIT), from the npm package uplot@%s, %s\n' "$VERSION" "$VERSION" "$INTEGRITY" >"$out/VERSION"
echo "vendored uPlot $VERSION into $out"
