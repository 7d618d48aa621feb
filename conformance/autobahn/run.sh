#!/usr/bin/env bash
# The Autobahn TestSuite's fuzzingclient, every case, against /echo/websocket
# of `switchboard serve`, then check.py on its results. Installs the suite
# (Python 2 code) into a Python 2.7 virtualenv under build/autobahn/ on first
# use. The HTML reports are left in build/autobahn/report/part1/index.html to
# part4/index.html (the cases are split between four clients; see below).
#
#   conformance/autobahn/run.sh          # SWITCHBOARD_BIN picks the binary (default target/debug)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BIN="${SWITCHBOARD_BIN:-$ROOT/target/debug/switchboard}"
OUT="$ROOT/build/autobahn"
VENV="$OUT/venv"
die() { echo "autobahn: FAILED: $*" >&2; exit 1; }

[ -x "$BIN" ] || die "no switchboard binary at $BIN; run cargo build first"

# autobahntestsuite 0.8.2 runs on Python 2.7 only; pyenv has 2.7.18 here.
PY27="${PYENV_ROOT:-$HOME/.pyenv}/versions/2.7.18/bin/python"
[ -x "$PY27" ] || PY27="$(command -v python2.7 || true)"
[ -n "$PY27" ] && [ -x "$PY27" ] || die "needs Python 2.7: pyenv's 2.7.18 ($PY27) or python2.7 on PATH"

if [ ! -f "$VENV/.installed" ] || [ "$HERE/requirements.txt" -nt "$VENV/.installed" ]; then
  echo "autobahn: installing autobahntestsuite into $VENV" >&2
  rm -rf "$VENV" "$OUT/virtualenv"
  mkdir -p "$OUT"
  # Python 2.7 has no venv module; 20.15.1 is the last virtualenv pip offers to Python 2.7.
  # pip on Python 2.7 warns on every call that 2.7 is past its end of life: its output goes to a log.
  "$PY27" -m pip install -q --disable-pip-version-check --target "$OUT/virtualenv" 'virtualenv==20.15.1' \
    >"$OUT/pip.log" 2>&1 || die "pip could not install virtualenv for Python 2.7; see $OUT/pip.log"
  PYTHONPATH="$OUT/virtualenv" "$PY27" -m virtualenv -q "$VENV" >>"$OUT/pip.log" 2>&1 \
    || die "virtualenv failed; see $OUT/pip.log"
  "$VENV/bin/pip" install -q --disable-pip-version-check -r "$HERE/requirements.txt" >>"$OUT/pip.log" 2>&1 \
    || die "pip could not install $HERE/requirements.txt; see $OUT/pip.log"
  "$VENV/bin/wstest" --help >/dev/null 2>&1 || die "wstest does not run after installing $HERE/requirements.txt"
  touch "$VENV/.installed"
fi

PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
# The suite sends messages of up to 16 MiB, as fast as it can; the default
# size limit's 1009 and the inbound rate limits are tested on their own.
"$BIN" serve --listen "127.0.0.1:$PORT" --xmpp-listen off --irc-listen off --store memory --max-message-size 16777216 \
  --max-message-rate 1000000 --max-byte-rate 1000000000 >"$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  grep -q "listening on" "$OUT/server.log" && break
  kill -0 "$SERVER" 2>/dev/null || die "the server exited: $(cat "$OUT/server.log")"
  sleep 0.1
done

# The compression cases (12.x and 13.x, 216 of them) each echo 1,000
# messages of up to 128 KiB, one at a time, and the suite's Python 2 client
# compresses each in its one thread: the cases' durations add up to about 20
# minutes here. The client and the server mostly wait for each other, so four
# clients, each with a quarter of the work (the groups' durations measured
# on 2026-11-23, split longest first), share the server and both cores.
# Each writes its own report.
rm -rf "$OUT/report"
PARTS=(
  '["12.2.*", "12.1.*", "13.2.*"]'
  '["12.3.*", "13.7.*", "13.6.*"]'
  '["12.5.*", "12.4.*", "13.3.*"]'
  '["1.*", "2.*", "3.*", "4.*", "5.*", "6.*", "7.*", "9.*", "10.*", "13.4.*", "13.5.*", "13.1.*"]'
)
PIDS=()
for i in "${!PARTS[@]}"; do
  part="$OUT/report/part$((i + 1))"
  mkdir -p "$part"
  cat >"$part.json" <<JSON
{
  "outdir": "$part",
  "servers": [{"agent": "switchboard", "url": "ws://127.0.0.1:$PORT/echo/websocket"}],
  "cases": ${PARTS[$i]},
  "exclude-cases": [],
  "exclude-agent-cases": {}
}
JSON
  (cd "$OUT" && timeout 900 "$VENV/bin/wstest" -m fuzzingclient -s "$part.json" >"$OUT/wstest-part$((i + 1)).log" 2>&1) &
  PIDS+=($!)
done
for i in "${!PIDS[@]}"; do
  wait "${PIDS[$i]}" || die "wstest failed; see $OUT/wstest-part$((i + 1)).log"
done
kill -0 "$SERVER" 2>/dev/null || die "the server died during the suite; see $OUT/server.log"
python3 "$HERE/check.py" "$OUT"/report/part*/index.json
