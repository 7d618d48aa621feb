#!/usr/bin/env bash
# Installs the centrifuge peer: Debian's redis-server (if missing) and the Go
# program in this folder, built against github.com/centrifugal/centrifuge as
# pinned by go.mod/go.sum (modules from the Go module proxy, into the module
# cache peers/centrifuge/.gomod, git-ignored) into peers/centrifuge/centrifuge-peer.
# Idempotent: the build is skipped when the binary is newer than every source.
# Needs Go ≥ 1.26 (`go` on PATH, or /usr/local/go/bin/go, or $GO). Prints one
# line with the versions.
set -euo pipefail
PEER=centrifuge
. "$(dirname "$0")/../lib/common.sh"
DIR="$PEERS_DIR/$PEER"
BIN="$DIR/centrifuge-peer"

command -v redis-server >/dev/null || apt_install redis-server
command -v redis-server >/dev/null || die "apt-get installed no redis-server"

GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
[ -x "$GO" ] || die "needs Go 1.26 or later: no go on PATH nor at /usr/local/go/bin/go (or set GO=/path/to/go)"

if [ ! -x "$BIN" ] || [ -n "$(find "$DIR" -maxdepth 1 \( -name '*.go' -o -name go.mod -o -name go.sum \) -newer "$BIN" -print -quit)" ]; then
  say "go build in $DIR ($("$GO" version))"
  # The module cache in the peer's folder, writable so that rm -rf can drop it.
  (cd "$DIR" && GOMODCACHE="$DIR/.gomod" GOFLAGS=-modcacherw "$GO" build -buildvcs=false -o "$BIN.tmp" . >&2) \
    || die "go build failed in $DIR"
  mv "$BIN.tmp" "$BIN"
fi

lib="$("$GO" version -m "$BIN" | awk '$1 == "dep" && $2 == "github.com/centrifugal/centrifuge" { print $3 }')"
gover="$("$GO" version "$BIN" | awk '{ print $2 }')"
redis="$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')"
echo "$PEER: installed centrifuge ${lib:-?} ($gover), redis ${redis:-?}"
