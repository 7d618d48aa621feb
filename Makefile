# The project's two commands: `make run` and `make test`.
# `make test` installs what the tests need (npm packages into web/, Debian's
# chromium for the browser tests, nats-server for the several-node tests,
# postgresql for the store's, profanity and tmux for the terminal client's,
# the socket.io peer, TCP Fast Open on the host (a sysctl), the Autobahn TestSuite
# into build/autobahn/, a JDK, Maven and the Smack integration tests into
# build/smack/) and runs every test: Rust unit and integration tests, the
# browser and client conformance tests in conformance/, Autobahn, then Smack.
SHELL := /bin/bash
CARGO ?= cargo
NPM ?= npm
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
WEB_DEPS := web/node_modules/.package-lock.json

.PHONY: run build test test-rust test-conformance test-autobahn test-smack jdk deps chromium nats-server postgresql xmpp-clients terminal-clients peer-socketio tcp-fast-open shootout satellite peers

run: build
	./target/release/switchboard serve

build: $(WEB_DEPS)
	$(CARGO) build --release

deps: $(WEB_DEPS) chromium nats-server postgresql peer-socketio tcp-fast-open

# npm packages the build embeds (sockjs-client, Chart.js) and the browser
# tests drive (playwright-core), pinned by web/package-lock.json.
$(WEB_DEPS): web/package.json web/package-lock.json
	$(NPM) ci --prefix web --no-audit --no-fund
	@touch $@

# Debian's Chromium; playwright's own browser download cannot work offline.
chromium:
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

# Debian's nats-server (2.9, with JetStream): the several-node tests start
# their own on a free loopback port.
nats-server:
	@command -v nats-server >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server; }

# TCP Fast Open for clients and servers (net.ipv4.tcp_fastopen=3; Linux's
# default, 1, is clients only): the tests of --tcp-fast-open and of the
# link's and the bench's use of it need both ends on this host.
tcp-fast-open:
	@tfo=$$(cat /proc/sys/net/ipv4/tcp_fastopen); [ $$(( tfo & 3 )) = 3 ] || echo $$(( tfo | 3 )) | $(SUDO) tee /proc/sys/net/ipv4/tcp_fastopen >/dev/null

# Debian's PostgreSQL (15): the store's tests start their own servers from
# its binaries, in temporary folders, on free loopback ports.
postgresql:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; }

test: deps test-rust test-conformance test-autobahn test-smack

# The bench's socket.io transport is tested against the real socket.io peer.
peer-socketio:
	peers/socketio/install.sh

test-rust: $(WEB_DEPS) nats-server postgresql peer-socketio tcp-fast-open
	$(CARGO) test --workspace

# slixmpp (PyPI), the XMPP client the XMPP conformance test drives, with the
# websockets package for its chat-app side and the irc package for IRC's
# test, in a venv of their own.
XMPP_VENV := build/xmpp/venv
xmpp-clients: $(XMPP_VENV)/.installed
$(XMPP_VENV)/.installed: conformance/xmpp/requirements.txt
	python3 -m venv $(XMPP_VENV)
	$(XMPP_VENV)/bin/pip install -q -r conformance/xmpp/requirements.txt
	@touch $@

# Debian's profanity, a terminal XMPP client, and irssi, a terminal IRC
# client, driven in tmux by conformance/terminal.test.mjs and irc.test.mjs.
terminal-clients:
	@command -v profanity >/dev/null && command -v irssi >/dev/null && command -v tmux >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq profanity irssi tmux; }

test-conformance: $(WEB_DEPS) chromium xmpp-clients terminal-clients
	$(CARGO) build
	ulimit -n 65536 2>/dev/null || true; \
	SWITCHBOARD_BIN=$(CURDIR)/target/debug/switchboard node --test --test-concurrency=1 conformance/

# The Autobahn TestSuite's fuzzingclient against /echo/websocket; the report
# is left in build/autobahn/report/index.html.
test-autobahn: $(WEB_DEPS)
	$(CARGO) build
	SWITCHBOARD_BIN=$(CURDIR)/target/debug/switchboard conformance/autobahn/run.sh

# Debian's JDK and Maven, which fetch and run the Smack integration tests.
jdk:
	@command -v java >/dev/null && command -v mvn >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jdk-headless maven; }

# The Smack integration test framework (Maven Central) against XMPP on
# 127.0.0.1:5222, one specification at a time; logs in build/smack/.
test-smack: jdk
	python3 conformance/smack/test_check.py
	$(CARGO) build
	SWITCHBOARD_BIN=$(CURDIR)/target/debug/switchboard conformance/smack/run.sh

# Installs every peer server (peers/) and smoke-checks it; a failure is reported
# and the others still run.
peers:
	peers/install-all.sh
	peers/check.sh

# Switchboard and every peer under the same workloads, one server at a time,
# pinned to one core; writes shootout/results/<time>/report.html and prints its
# path. `make shootout QUICK=1` is the profile that finishes in under 15 minutes.
shootout: build
	QUICK=$(QUICK) SHOOTOUT_SKIP_BUILD=1 shootout/run.sh

# The satellite-link study through `switchboard link` (docs/satellite.md):
# federation between two Switchboard servers, pairs of Prosody, ejabberd,
# ircu and ngIRCd, IRC between two Switchboard nodes, and client logins by
# style; QUICK=1 is 2-byte messages in three cells and a login a style at
# 2400 bit/s and 0.5 s, about 14 minutes (MODES="starttls zero login",
# about 4).
satellite: build
	QUICK=$(QUICK) shootout/satellite.sh
