// XMPP with clients nobody here wrote, each talking in a MUC room with a
// chat-app WebSocket client in the same room:
// - slixmpp (PyPI) over TCP with STARTTLS and a self-signed certificate
//   made here with openssl: login, ping, discovery (conformance/xmpp/
//   slixmpp_muc.py; `make test` installs slixmpp into build/xmpp/venv), and
//   a roster, offline messages and the archive (paged by slixmpp's MAM
//   plugin) kept across a restart of a server on a SQLite store
//   (slixmpp_store.py);
// - @xmpp/client 0.14 (npm) in Node over STARTTLS: SASL2, Bind 2, stream
//   management inline and FAST, its second login with the token it was
//   given (conformance/xmpp/xmppjs_fast.mjs);
// - Strophe.js 5 (npm) in Chromium over XMPP over WebSocket (RFC 7395), over
//   BOSH (XEP-0206), and over each SockJS transport at the /xmpp mount.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { launchBrowser, runSwitchboard, servePages, startServer } from "./lib.mjs";

const PYTHON = new URL("../build/xmpp/venv/bin/python", import.meta.url).pathname;
const SCRIPT = new URL("./xmpp/slixmpp_muc.py", import.meta.url).pathname;
const STORE_SCRIPT = new URL("./xmpp/slixmpp_store.py", import.meta.url).pathname;
const XMPPJS_SCRIPT = new URL("./xmpp/xmppjs_fast.mjs", import.meta.url).pathname;
const STROPHE = new URL("../web/node_modules/strophe.js/dist/strophe.umd.min.js", import.meta.url).pathname;

let server, xmppPort, tlsServer, tlsXmppPort, configDir, certFile;

/** The XMPP port a server prints on its second line. */
async function xmppPortOf(server) {
  const line = await server.nextLine();
  const m = line.match(/serves XMPP for localhost on 127\.0\.0\.1:(\d+)/);
  assert.ok(m, `unexpected second line: ${line}`);
  return m[1];
}

before(async () => {
  // An account made as a user makes one: `switchboard xmpp-account NAME`, password on stdin.
  const made = await runSwitchboard(["xmpp-account", "carol"], { input: "carols-secret\n" });
  assert.equal(made.code, 0, made.stderr);
  configDir = mkdtempSync(join(tmpdir(), "switchboard-xmpp-"));
  const config = join(configDir, "switchboard.toml");
  writeFileSync(config, made.stdout);
  server = await startServer(["--xmpp-listen", "127.0.0.1:0", "--config", config]);
  xmppPort = await xmppPortOf(server);
  // A self-signed certificate for localhost, which the slixmpp test trusts.
  certFile = join(configDir, "cert.pem");
  const keyFile = join(configDir, "key.pem");
  execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", keyFile, "-out", certFile], { stdio: "pipe" });
  tlsServer = await startServer(["--xmpp-listen", "127.0.0.1:0", "--config", config, "--tls-cert", certFile, "--tls-key", keyFile]);
  tlsXmppPort = await xmppPortOf(tlsServer);
});
after(async () => {
  assert.equal(await server?.stop(), 0);
  assert.equal(await tlsServer?.stop(), 0);
  if (configDir) rmSync(configDir, { recursive: true });
});

test("slixmpp logs in over STARTTLS (anonymously, and to an account with SCRAM), pings, and chats in a MUC room with a chat-app client", async () => {
  assert.ok(existsSync(PYTHON), `no ${PYTHON}: run \`make xmpp-clients\` (make test does) to install slixmpp`);
  assert.match(tlsServer.url, /^https:/);
  const wsUrl = tlsServer.url.replace("https://", "wss://") + "/chat/websocket";
  const proc = spawn(PYTHON, [SCRIPT, tlsXmppPort, wsUrl, "carol", "carols-secret", certFile], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  proc.stdout.on("data", (d) => (output += d));
  proc.stderr.on("data", (d) => (output += d));
  const code = await new Promise((resolve) => proc.once("exit", resolve));
  assert.equal(code, 0, output);
  assert.match(output, /^13 passed, 0 failed$/m, output);
});

test("@xmpp/client (npm) logs in with SASL2, Bind 2 and stream management inline, is given a FAST token, and logs in with it on its second connection", async () => {
  const proc = spawn(process.execPath, [XMPPJS_SCRIPT, tlsXmppPort, "carol", "carols-secret"], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NODE_EXTRA_CA_CERTS: certFile },
  });
  let output = "";
  proc.stdout.on("data", (d) => (output += d));
  proc.stderr.on("data", (d) => (output += d));
  const code = await new Promise((resolve) => proc.once("exit", resolve));
  assert.equal(code, 0, output);
  const logins = output.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line));
  assert.equal(logins.length, 2, output);
  const [first, second] = logins;
  // A password first (SCRAM over SASL2, challenges and all), asking for a token.
  assert.deepEqual([first.mechanism, first.token, first.smInline, first.echo], ["SCRAM-SHA-1", true, true, "hello 1"], output);
  // Then the token: one round trip, no password.
  assert.deepEqual([second.mechanism, second.smInline, second.echo], ["HT-SHA-256-NONE", true, "hello 2"], output);
  for (const login of logins) assert.match(login.jid, /^carol@localhost\/fastjs\/[0-9a-f]{16}$/, "Bind 2: tag/random");
});

/** Runs slixmpp_store.py `phase` against XMPP on `port`; its output. */
async function slixmppStore(phase, port) {
  const proc = spawn(PYTHON, [STORE_SCRIPT, phase, port, certFile], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  proc.stdout.on("data", (d) => (output += d));
  proc.stderr.on("data", (d) => (output += d));
  const code = await new Promise((resolve) => proc.once("exit", resolve));
  assert.equal(code, 0, output);
  return output;
}

test("slixmpp's roster, messages to an offline user and its archive outlive a restart (SIGTERM) of a server on a SQLite store", async () => {
  assert.ok(existsSync(PYTHON), `no ${PYTHON}: run \`make xmpp-clients\` (make test does) to install slixmpp`);
  const dataDir = join(configDir, "data");
  // Accounts made as an administrator makes them, into the store the server will read.
  for (const [name, password] of [["dora", "doras-secret"], ["evan", "evans-secret"]]) {
    const made = await runSwitchboard(["account", "--data-dir", dataDir, "add", name], { input: `${password}\n` });
    assert.equal(made.code, 0, made.stderr);
  }
  const keyFile = join(configDir, "key.pem");
  const args = ["--xmpp-listen", "127.0.0.1:0", "--store", "sqlite", "--data-dir", dataDir, "--tls-cert", certFile, "--tls-key", keyFile];
  const first = await startServer(args);
  try {
    assert.match(await slixmppStore("before", await xmppPortOf(first)), /^2 passed, 0 failed$/m);
  } finally {
    assert.equal(await first.stop(), 0);
  }
  const second = await startServer(args);
  try {
    assert.match(await slixmppStore("after", await xmppPortOf(second)), /^5 passed, 0 failed$/m);
  } finally {
    assert.equal(await second.stop(), 0);
  }
});

/**
 * Strophe.js in Chromium, `via` RFC 7395 at /xmpp-websocket ("websocket"),
 * BOSH at /http-bind ("bosh", from the page's own origin, so through CORS),
 * or a sockjs-client transport, forced, to the /xmpp SockJS mount
 * ("sockjs:<transport>"), through a transport plugged in with Strophe's
 * Connection.addProtocol. Logs in, pings, and talks in `lobby` with a
 * chat-app member.
 */
async function stropheTalks(via) {
  const sockjs = via.startsWith("sockjs:") ? via.slice("sockjs:".length) : null;
  const pages = await servePages({
    "/": { body: `<!doctype html><script src='/strophe.js'></script><script src='${server.url}/sockjs.min.js'></script>` },
    "/strophe.js": { type: "text/javascript", body: readFileSync(STROPHE) },
  });
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    await page.goto(pages.url + "/");
    const base = server.url;
    const result = await page.evaluate(async ({ base, via, sockjs }) => {
      // The UMD builds set these globals.
      const { Strophe, $iq, $pres, $msg, SockJS } = window;
      const within = (promise, what) =>
        Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Error(`no ${what} in 20 s`)), 20000))]);
      const log = [];
      const nick = `strophe-${sockjs || via}`;
      const chatName = `alice-${sockjs || via}`;
      // The chat-app member, in the browser too.
      const alice = new WebSocket(base.replace("http://", "ws://") + "/chat/websocket");
      const aliceHeard = [];
      const aliceWaiters = [];
      alice.onmessage = (e) => {
        const event = JSON.parse(e.data);
        aliceHeard.push(event);
        aliceWaiters.splice(0).forEach((w) => w());
      };
      const aliceSees = (test, what) =>
        within(new Promise((resolve) => {
          const check = () => (aliceHeard.some(test) ? resolve() : aliceWaiters.push(check));
          check();
        }), what);
      await within(new Promise((resolve) => (alice.onopen = resolve)), "chat connection");
      alice.send(JSON.stringify({ name: chatName, room: "lobby" }));
      await aliceSees((e) => e.event === "join" && e.name === chatName, "alice's join");

      let conn;
      if (via === "websocket") {
        conn = new Strophe.Connection(base.replace("http://", "ws://") + "/xmpp-websocket");
      } else if (via === "bosh") {
        conn = new Strophe.Connection(base + "/http-bind");
      } else {
        // Strophe's WebSocket transport, its socket a SockJS one: each SockJS
        // message is one framing element, as over RFC 7395.
        class SockjsTransport extends Strophe.Websocket {
          constructor(connection) {
            // Strophe's makes the service a ws:// URL; SockJS takes http://.
            const service = connection.service;
            super(connection);
            connection.service = service;
          }
          _connect() {
            this._closeSocket();
            this.socket = new SockJS(this._conn.service, null, { transports: [sockjs] });
            this.socket.onopen = () => this._onOpen();
            this.socket.onerror = (e) => this._onError(e);
            this.socket.onclose = (e) => this._onClose(e);
            this.socket.onmessage = (message) => this._onInitialMessage(message);
          }
        }
        Strophe.Connection.addProtocol("sockjs", SockjsTransport);
        conn = new Strophe.Connection(base + "/xmpp", { protocol: "sockjs" });
      }
      await within(new Promise((resolve, reject) => conn.connect("localhost", null, (status) => {
        if (status === Strophe.Status.CONNECTED) resolve();
        if (status === Strophe.Status.AUTHFAIL || status === Strophe.Status.CONNFAIL) reject(new Error(`status ${status}`));
      })), "login");
      log.push(`jid ${conn.jid}`);
      if (sockjs) log.push(`over ${conn._proto.socket.transport}`);
      if (via === "bosh") log.push(`over ${conn._proto instanceof Strophe.Bosh ? "bosh" : "something else"}`);
      await within(new Promise((resolve, reject) => conn.sendIQ($iq({ type: "get", to: "localhost" }).c("ping", { xmlns: "urn:xmpp:ping" }), resolve, reject)), "ping");
      log.push("ping answered");

      const groupchat = [];
      let joined;
      const joinedP = new Promise((resolve) => (joined = resolve));
      conn.addHandler((m) => {
        if (m.getElementsByTagName("subject").length) joined();
        const body = m.getElementsByTagName("body")[0];
        if (body) groupchat.push([m.getAttribute("from"), body.textContent]);
        return true;
      }, null, "message", "groupchat");
      conn.send($pres({ to: `lobby@conference.localhost/${nick}` }).c("x", { xmlns: "http://jabber.org/protocol/muc" }));
      await within(joinedP, "the room's subject");
      await aliceSees((e) => e.event === "join" && e.name === nick, "strophe's join at alice");
      log.push("joined lobby");

      conn.send($msg({ to: "lobby@conference.localhost", type: "groupchat" }).c("body").t("hello from Strophe.js"));
      await aliceSees((e) => e.name === nick && e.message === "hello from Strophe.js", "strophe's message at alice");
      log.push("alice got strophe's message");
      alice.send(JSON.stringify({ message: "hello from the chat app" }));
      await within(new Promise((resolve) => {
        const check = () => (groupchat.some(([from, text]) => from === `lobby@conference.localhost/${chatName}` && text === "hello from the chat app") ? resolve() : setTimeout(check, 20));
        check();
      }), "alice's message at strophe");
      log.push("strophe got alice's message");
      const reflected = groupchat.some(([from, text]) => from === `lobby@conference.localhost/${nick}` && text === "hello from Strophe.js");
      conn.send($pres({ to: `lobby@conference.localhost/${nick}`, type: "unavailable" }));
      await aliceSees((e) => e.event === "leave" && e.name === nick, "strophe's leave at alice");
      log.push("strophe left");
      conn.disconnect();
      alice.close();
      return { log, reflected };
    }, { base, via, sockjs });
    const expected = ["ping answered", "joined lobby", "alice got strophe's message", "strophe got alice's message", "strophe left"];
    if (sockjs) {
      assert.deepEqual(result.log.slice(1), [`over ${sockjs}`, ...expected], "sockjs-client used the forced transport");
    } else if (via === "bosh") {
      assert.deepEqual(result.log.slice(1), ["over bosh", ...expected], "Strophe used BOSH");
    } else {
      assert.deepEqual(result.log.slice(1), expected);
    }
    assert.match(result.log[0], /^jid anon-[0-9a-f]+@localhost\/.+/);
    assert.ok(result.reflected, "the groupchat message was reflected to Strophe.js");
  } finally {
    await browser.close();
    await pages.close();
  }
}

test("Strophe.js in Chromium logs in over WebSocket, pings, and chats in a MUC room", () => stropheTalks("websocket"));

test("Strophe.js in Chromium does the same over BOSH at /http-bind, from another origin", () => stropheTalks("bosh"));

for (const transport of ["websocket", "xhr-streaming", "xhr-polling", "jsonp-polling"]) {
  test(`Strophe.js in Chromium does the same over SockJS's ${transport} at the /xmpp mount`, () => stropheTalks(`sockjs:${transport}`));
}
