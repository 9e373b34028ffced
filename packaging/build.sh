#!/bin/bash
# npm run package: builds, offline and reproducibly (same commit + same Node
# binary -> same bytes), into dist-pkg/:
#   crishim                              one self-contained executable (Node SEA)
#   crishim_<version>_<arch>.deb         /usr/bin/crishim, systemd units, docs, example CNI config
#   crishim-<version>-linux-<arch>.tar.gz  the same tree, for other distributions
#   SHA256SUMS
# Uses only npm packages from package-lock.json (esbuild, postject), the Node
# binary that runs this script and Debian's dpkg-deb; nothing is downloaded.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=dist-pkg
BUILD=$OUT/build
STAGE=$OUT/stage
VERSION=$(node -p 'require("./package.json").version')
ARCH=$(dpkg --print-architecture 2>/dev/null || node -p 'process.arch === "x64" ? "amd64" : process.arch')
# file times in both archives: the commit's, so two builds of one commit match
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
export SOURCE_DATE_EPOCH
step() { echo "package: $*"; }

rm -rf "$OUT"
mkdir -p "$BUILD"

step "tsc"
npm run -s build

step "esbuild bundle"
node packaging/bundle.mjs "$BUILD/crishim.cjs"

# the blob: bundle + assets (the CRI proto, the checkpoint schema; src/assets.ts reads them)
step "single executable blob"
node --experimental-sea-config packaging/sea-config.json >/dev/null

step "inject into $(node -p process.execPath) ($(node --version))"
cp "$(node -p process.execPath)" "$BUILD/crishim"
chmod 755 "$BUILD/crishim"
# postject (LIEF) warns about ELF note sections it does not name: shown only on failure
npx --no-install postject "$BUILD/crishim" NODE_SEA_BLOB "$BUILD/sea-prep.blob" \
  --sentinel-fuse NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2 >"$BUILD/postject.log" 2>&1 || { cat "$BUILD/postject.log" >&2; exit 1; }
# smoke test with nothing around it: no node on PATH, no node_modules
env -i "$BUILD/crishim" --help >/dev/null
cp "$BUILD/crishim" "$OUT/crishim"

step "tree"
install -D -m 0755 "$BUILD/crishim" "$STAGE/usr/bin/crishim"
install -D -m 0644 packaging/systemd/crishim.service "$STAGE/lib/systemd/system/crishim.service"
install -D -m 0644 packaging/systemd/crishim.socket "$STAGE/lib/systemd/system/crishim.socket"
install -D -m 0644 packaging/README.md "$STAGE/usr/share/doc/crishim/README.md"
install -D -m 0644 packaging/debian/copyright "$STAGE/usr/share/doc/crishim/copyright"
install -D -m 0644 cni/10-crishim.conflist "$STAGE/usr/share/doc/crishim/examples/10-crishim.conflist"

step "tar.gz"
TARBALL=$OUT/crishim-$VERSION-linux-$ARCH.tar.gz
tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner -C "$STAGE" -cf - . | gzip -n -9 >"$TARBALL"

if command -v dpkg-deb >/dev/null; then
  step ".deb"
  SIZE=$(du -sk --apparent-size "$STAGE" | cut -f1)
  mkdir -p "$STAGE/DEBIAN"
  sed -e "s/@VERSION@/$VERSION/" -e "s/@ARCH@/$ARCH/" -e "s/@SIZE@/$SIZE/" packaging/debian/control.in >"$STAGE/DEBIAN/control"
  install -m 0755 packaging/debian/postinst packaging/debian/prerm packaging/debian/postrm "$STAGE/DEBIAN/"
  find "$STAGE" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
  # gzip: every dpkg can read it, and it compresses the 100 MB executable in seconds
  dpkg-deb --root-owner-group -Zgzip -z9 --build "$STAGE" "$OUT/crishim_${VERSION}_${ARCH}.deb" >/dev/null
else
  echo "package: dpkg-deb not found (apt-get install dpkg-dev): no .deb built" >&2
fi

(cd "$OUT" && sha256sum crishim ./*.tar.gz ./*.deb 2>/dev/null | sed 's# \./# #' >SHA256SUMS) || true
step "done"
ls -l "$OUT"
