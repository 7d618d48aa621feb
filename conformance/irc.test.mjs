// IRC with clients nobody here wrote, each in the room #lobby beside a
// chat-app WebSocket member:
// - the Python `irc` library (PyPI, 20.x) with an slixmpp MUC occupant in
//   the same room, each hearing the other two (conformance/xmpp/irc_lib.py;
//   `make test` installs both into build/xmpp/venv);
// - irssi, the terminal client (Debian), driven in tmux, its screen read
//   with capture-pane: it joins #lobby and exchanges lines with the chat
//   page. `make test` installs irssi and tmux.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";
import { shows, startServer } from "./lib.mjs";

const require = createRequire(new URL("../web/package.json", import.meta.url));
const WebSocket = require("ws");

const PYTHON = new URL("../build/xmpp/venv/bin/python", import.meta.url).pathname;
const SCRIPT = new URL("./xmpp/irc_lib.py", import.meta.url).pathname;
const PATIENCE = 20000;

/** The ports a server prints after its first line: XMPP's and IRC's. */
async function portsOf(server) {
  const ports = {};
  while (!ports.irc) {
    const line = await server.nextLine();
    const xmpp = line.match(/serves XMPP for localhost on 127\.0\.0\.1:(\d+)/);
    const irc = line.match(/serves IRC on 127\.0\.0\.1:(\d+)$/);
    if (xmpp) ports.xmpp = Number(xmpp[1]);
    if (irc) ports.irc = Number(irc[1]);
  }
  return ports;
}

/** A chat-app member of `room` named `name`, past its own join. */
async function chatMember(server, name, room) {
  const ws = new WebSocket(`${server.url.replace("http", "ws")}/chat/websocket`);
  const events = [];
  const waiting = [];
  ws.on("message", (data) => {
    events.push(JSON.parse(data.toString()));
    for (const w of waiting.splice(0)) w();
  });
  await new Promise((resolve, reject) => {
    ws.on("open", resolve);
    ws.on("error", reject);
  });
  const next = (want) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${JSON.stringify(want)} in ${JSON.stringify(events)}`)), PATIENCE);
      const check = () => {
        const at = events.findIndex((e) => Object.entries(want).every(([k, v]) => e[k] === v));
        if (at < 0) return waiting.push(check);
        clearTimeout(timer);
        resolve(events.splice(0, at + 1).pop());
      };
      check();
    });
  ws.send(JSON.stringify({ name, room }));
  await next({ event: "join", name });
  return { next, say: (message) => ws.send(JSON.stringify({ message })), close: () => ws.close() };
}

test("the Python irc library, a chat-app member and an slixmpp occupant talk in one room", async () => {
  const dir = mkdtempSync(join(tmpdir(), "switchboard-irc-"));
  const cert = join(dir, "cert.pem");
  const key = join(dir, "key.pem");
  execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", key, "-out", cert], { stdio: "pipe" });
  const server = await startServer(["--xmpp-listen", "127.0.0.1:0", "--irc-listen", "127.0.0.1:0", "--irc-tls-listen", "off",
    "--tls-cert", cert, "--tls-key", key]);
  try {
    const ports = await portsOf(server);
    const wss = `${server.url.replace("https", "wss")}/chat/websocket`;
    const child = spawn(PYTHON, [SCRIPT, String(ports.irc), String(ports.xmpp), wss, cert], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const code = await new Promise((resolve) => child.on("exit", resolve));
    assert.equal(code, 0, out);
    assert.match(out, /^10 passed, 0 failed$/m, out);
  } finally {
    assert.equal(await server.stop(), 0);
    rmSync(dir, { recursive: true, force: true });
  }
});

test("irssi, in tmux, joins #lobby and exchanges lines with the chat page", async () => {
  for (const tool of ["tmux", "irssi"]) {
    try {
      execFileSync("which", [tool], { stdio: "pipe" });
    } catch {
      assert.fail(`no ${tool}: \`make test\` installs Debian's ${tool}`);
    }
  }
  const dir = mkdtempSync(join(tmpdir(), "switchboard-irssi-"));
  const session = `switchboard-irssi-${process.pid}`;
  const server = await startServer(["--irc-listen", "127.0.0.1:0"]);
  try {
    const { irc } = await portsOf(server);
    const chat = await chatMember(server, "Pat Page", "lobby");
    execFileSync("tmux", ["new-session", "-d", "-s", session, "-x", "160", "-y", "40", "-e", `HOME=${dir}`,
      "irssi", "--home", join(dir, ".irssi"), "-n", "iris", "-c", "127.0.0.1", "-p", String(irc)]);
    await shows(session, "Welcome to the Switchboard IRC Network");
    execFileSync("tmux", ["send-keys", "-t", session, "/join #lobby", "Enter"]);
    await shows(session, "Pat\\20Page");
    await chat.next({ event: "join", name: "iris" });
    execFileSync("tmux", ["send-keys", "-t", session, "hello from irssi", "Enter"]);
    const said = await chat.next({ name: "iris" });
    assert.equal(said.message, "hello from irssi");
    chat.say("hello from the chat page");
    await shows(session, "hello from the chat page");
    execFileSync("tmux", ["send-keys", "-t", session, "/me waves", "Enter"]);
    assert.equal((await chat.next({ name: "iris" })).message, "/me waves");
    execFileSync("tmux", ["send-keys", "-t", session, "/quit", "Enter"]);
    await chat.next({ event: "leave", name: "iris" });
    chat.close();
  } finally {
    try {
      execFileSync("tmux", ["kill-session", "-t", session], { stdio: "pipe" });
    } catch {
      // Gone with /quit.
    }
    assert.equal(await server.stop(), 0);
    rmSync(dir, { recursive: true, force: true });
  }
});
