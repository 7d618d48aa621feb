// XMPP with a client nobody here wrote: slixmpp (PyPI) logs in over TCP,
// pings, discovers the MUC service and talks in `lobby` with a chat-app
// WebSocket client in the same room (conformance/xmpp/slixmpp_muc.py).
// `make test` installs slixmpp into build/xmpp/venv.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { startServer } from "./lib.mjs";

const PYTHON = new URL("../build/xmpp/venv/bin/python", import.meta.url).pathname;
const SCRIPT = new URL("./xmpp/slixmpp_muc.py", import.meta.url).pathname;

let server, xmppPort;
before(async () => {
  server = await startServer(["--xmpp-listen", "127.0.0.1:0"]);
  const line = await server.nextLine();
  const m = line.match(/serves XMPP for localhost on 127\.0\.0\.1:(\d+)/);
  assert.ok(m, `unexpected second line: ${line}`);
  xmppPort = m[1];
});
after(async () => {
  assert.equal(await server?.stop(), 0);
});

test("slixmpp logs in, pings, and chats in a MUC room with a chat-app client", async () => {
  assert.ok(existsSync(PYTHON), `no ${PYTHON}: run \`make xmpp-clients\` (make test does) to install slixmpp`);
  const wsUrl = server.url.replace("http://", "ws://") + "/chat/websocket";
  const proc = spawn(PYTHON, [SCRIPT, xmppPort, wsUrl], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  proc.stdout.on("data", (d) => (output += d));
  proc.stderr.on("data", (d) => (output += d));
  const code = await new Promise((resolve) => proc.once("exit", resolve));
  assert.equal(code, 0, output);
  assert.match(output, /^9 passed, 0 failed$/m, output);
});
