#!/usr/bin/env bash
# Builds mbedTLS's example DTLS client (programs/ssl/ssl_client2) with Connection ID support
# (MBEDTLS_SSL_DTLS_CONNECTION_ID), for the interop test test/devices/dtls-cid-mbedtls.test.ts.
#
# Debian's libmbedtls is built without CID and ships no ssl_client2, so this takes Debian's mbedtls source
# package through apt with a private apt configuration (nothing under /etc/apt changes, root not needed):
# deb-src entries for the Debian mirror(s) this machine is already configured with, `apt-get update` into the
# cache, `apt-get source --download-only mbedtls`, unpack, enable CID in config.h, and build only the static
# libraries and ssl_client2 (make -j2; about 10 s on two cores).
#
# Idempotent: a built client in the cache whose stamp matches is reused without any download.
# Prints the client's path on stdout (everything else goes to stderr). Writes ssl_client2.info beside it
# (source version, CID extension number).
#
# Environment: MBEDTLS_CID_CACHE (default <repo>/.cache/mbedtls-cid), MBEDTLS_CID_JOBS (default 2),
# MBEDTLS_CID_SUITE (default bookworm), MBEDTLS_CID_APT_ETC (where the mirrors are read from; default /etc/apt).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${MBEDTLS_CID_CACHE:-$repo/.cache/mbedtls-cid}
jobs=${MBEDTLS_CID_JOBS:-2}
binary=$cache/ssl_client2
# Bump when the build recipe changes, so older cached builds are rebuilt.
recipe=1

log() { echo "build-mbedtls-cid-client: $*" >&2; }
die() { log "$*"; exit 1; }

mkdir -p "$cache"
# One build at a time per cache (parallel test runs).
if command -v flock >/dev/null; then
  exec 9>"$cache/.lock"
  flock -w 600 9 || die "timed out waiting for another build in $cache"
fi

cached_ok() {
  [ -x "$binary" ] && [ -f "$cache/stamp" ] && [ "$(cat "$cache/stamp")" = "recipe=$recipe" ] &&
    "$binary" query_config=MBEDTLS_SSL_DTLS_CONNECTION_ID >/dev/null 2>&1
}
if cached_ok; then
  echo "$binary"
  exit 0
fi

for tool in apt-get cc make tar; do command -v "$tool" >/dev/null || die "$tool is needed (apt-get install build-essential)"; done
started=$(date +%s)
rm -f "$cache/stamp"

# --- 1. deb-src entries for the configured Debian mirror(s) -------------------------------------------------
# The mirror URIs of the Debian archive itself (a URI path ending in /debian; third-party repositories have no
# source packages) from the one-line (.list) and deb822 (.sources) files; disabled files (other suffixes) and
# "Enabled: no" stanzas are skipped. The suite is bookworm whatever this machine runs: bookworm's mbedtls is
# 2.28, the draft-05 CID peer this test is about (trixie's 3.6 speaks RFC 9146 by default).
apt_dir=$cache/apt
rm -rf "$apt_dir"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$apt_dir/sources.list.d"
apt_etc=${MBEDTLS_CID_APT_ETC:-/etc/apt}
# Lines "URI<TAB>signed-by keyring path or empty".
mirrors() {
  for file in "$apt_etc/sources.list" "$apt_etc"/sources.list.d/*.list; do
    [ -f "$file" ] || continue
    # deb [options] uri suite components...
    awk '$1 == "deb" {
      uri = 2; keyring = ""
      if ($2 ~ /^\[/) {
        for (; uri <= NF; uri++) { if ($uri ~ /^\[?signed-by=/) { keyring = $uri; sub(/^\[?signed-by=/, "", keyring); sub(/\]$/, "", keyring) } if ($uri ~ /\]$/) break }
        uri++
      }
      print $uri "\t" keyring
    }' "$file"
  done
  for file in "$apt_etc"/sources.list.d/*.sources; do
    [ -f "$file" ] || continue
    awk '
      function flush() {
        if (types ~ /(^|[ \t])deb([ \t]|$)/ && enabled) for (i = 1; i <= n; i++) print uris[i] "\t" keyring
        n = 0; types = ""; keyring = ""; enabled = 1
      }
      BEGIN { enabled = 1 }
      /^[ \t]*$/ { flush(); next }
      /^#/ { next }
      tolower($1) == "types:" { types = $0 }
      tolower($1) == "uris:" { for (i = 2; i <= NF; i++) uris[++n] = $i }
      tolower($1) == "signed-by:" && $2 ~ /^\// { keyring = $2 }
      tolower($1) == "enabled:" && tolower($2) == "no" { enabled = 0 }
      END { flush() }' "$file"
  done
}
mirrors | awk -F '\t' '$1 ~ /^[a-z+]+:\/\/[^ ]*\/debian(\/[0-9]{8}T[0-9]{6}Z)?\/?$/ && !seen[$1]++ {
  print "deb-src " ($2 != "" ? "[signed-by=" $2 "] " : "") $1 " " suite " main"
}' suite="${MBEDTLS_CID_SUITE:-bookworm}" >"$apt_dir/sources.list"
[ -s "$apt_dir/sources.list" ] || die "no Debian archive mirror found in $apt_etc/sources.list{,.d/*}"
log "deb-src entries (private apt configuration in $apt_dir):"
sed 's/^/  /' "$apt_dir/sources.list" >&2

apt_opts=(
  -o "Dir::Etc::SourceList=$apt_dir/sources.list"
  -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
  -o "Dir::State::Lists=$apt_dir/lists"
  -o "Dir::Cache::Archives=$apt_dir/archives"
  -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
  -o "APT::Sandbox::User=$(id -un)"
  -o Acquire::Retries=2
)
apt-get "${apt_opts[@]}" -qq update >&2 || die "apt-get update (deb-src) failed"

# --- 2. the source package ----------------------------------------------------------------------------------
src_dir=$cache/src
rm -rf "$src_dir"
mkdir -p "$src_dir"
(cd "$src_dir" && apt-get "${apt_opts[@]}" -q source --download-only mbedtls >&2) || die "apt-get source mbedtls failed"
dsc=$(ls "$src_dir"/mbedtls_*.dsc)
version=$(basename "$dsc" .dsc | sed 's/^mbedtls_//')
log "source package mbedtls $version"
tree=$src_dir/mbedtls
if command -v dpkg-source >/dev/null; then
  (cd "$src_dir" && dpkg-source -x "$dsc" mbedtls >&2)
else
  mkdir -p "$tree"
  tar -xf "$src_dir"/mbedtls_*.orig.tar.* -C "$tree" --strip-components=1
fi
rm -rf "$apt_dir"

# --- 3. configure: CID on ---------------------------------------------------------------------------------
config=$tree/include/mbedtls/config.h
[ -f "$config" ] || die "expected mbedTLS 2.x (include/mbedtls/config.h) in mbedtls $version"
sed -i 's|^//#define MBEDTLS_SSL_DTLS_CONNECTION_ID$|#define MBEDTLS_SSL_DTLS_CONNECTION_ID|' "$config"
grep -q '^#define MBEDTLS_SSL_DTLS_CONNECTION_ID$' "$config" || die "could not enable MBEDTLS_SSL_DTLS_CONNECTION_ID in $config"
# 2.x speaks draft-ietf-tls-dtls-connection-id-05: extension MBEDTLS_TLS_EXT_CID (254 unless configured).
extension=$(sed -n 's|^#define MBEDTLS_TLS_EXT_CID[[:space:]]\{1,\}\([0-9]\{1,\}\).*|\1|p' "$tree/include/mbedtls/ssl.h" | head -1)
[ -n "$extension" ] || die "MBEDTLS_TLS_EXT_CID not found in ssl.h"

# --- 4. build: the static libraries and ssl_client2 only ------------------------------------------------------
build_log=$cache/build.log
log "building (make -j$jobs; log in $build_log)"
{
  make -C "$tree/library" -j"$jobs" static CFLAGS=-O2 &&
    make -C "$tree/programs" -j"$jobs" ssl/ssl_client2 CFLAGS=-O2
} >"$build_log" 2>&1 || { tail -30 "$build_log" >&2; die "build failed"; }
"$tree/programs/ssl/ssl_client2" query_config=MBEDTLS_SSL_DTLS_CONNECTION_ID >/dev/null || die "the built ssl_client2 lacks MBEDTLS_SSL_DTLS_CONNECTION_ID"

cp "$tree/programs/ssl/ssl_client2" "$binary.tmp"
mv -f "$binary.tmp" "$binary"
printf 'source=mbedtls %s\ncid_extension=%s\ncid_aad=draft-ietf-tls-dtls-connection-id-05\n' "$version" "$extension" >"$cache/ssl_client2.info"
echo "recipe=$recipe" >"$cache/stamp"
rm -rf "$src_dir"
log "built mbedtls $version ssl_client2 with CID (extension $extension) in $(($(date +%s) - started)) s"
echo "$binary"
