// A terminal XMPP client people use, Debian's profanity, driven in tmux (its
// screen read with capture-pane): a message sent to its user while it was
// offline, kept across a restart of a server on a SQLite store, is given to
// it when it connects (XEP-0160), and a room it joins after the restart
// shows what was said there before it, read from the room's archive.
// `make test` installs profanity and tmux.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runSwitchboard, shows, startServer } from "./lib.mjs";

const PATIENCE = 20000;

/** The XMPP port a server prints on its second line. */
async function xmppPortOf(server) {
  const line = await server.nextLine();
  const m = line.match(/serves XMPP for localhost on 127\.0\.0\.1:(\d+)/);
  assert.ok(m, `unexpected second line: ${line}`);
  return Number(m[1]);
}

/** A raw XMPP client on `port`: `until(text)` resolves once the server has sent `text`. */
function rawClient(port) {
  const socket = net.connect(port, "127.0.0.1");
  let heard = "";
  const waiting = [];
  socket.setEncoding("utf8");
  socket.on("data", (d) => {
    heard += d;
    for (const w of waiting.splice(0)) w();
  });
  const until = (text) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${text} in: ${heard}`)), PATIENCE);
      const check = () => {
        const at = heard.indexOf(text);
        if (at < 0) return waiting.push(check);
        clearTimeout(timer);
        heard = heard.slice(at + text.length);
        resolve();
      };
      check();
    });
  return { send: (xml) => socket.write(xml), until, close: () => socket.destroy() };
}

/** dora logs in with PLAIN, sends evan, who is offline, `body`, and says
 * `news` in the room `plans`; resolves once both were handled. */
async function doraSends(port, body, news) {
  const c = rawClient(port);
  const open = "<stream:stream to='localhost' version='1.0' xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>";
  c.send(open);
  await c.until("</stream:features>");
  c.send(`<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>${Buffer.from("\0dora\0doras-secret").toString("base64")}</auth>`);
  await c.until("<success");
  c.send(open);
  await c.until("</stream:features>");
  c.send("<iq type='set' id='b'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></iq>");
  await c.until("id=\"b\"");
  c.send("<presence to='plans@conference.localhost/dora'><x xmlns='http://jabber.org/protocol/muc'/></presence>");
  await c.until("<subject");
  // A new room is locked until its owner accepts the default configuration (XEP-0045 §10.1.2).
  c.send("<iq type='set' id='cfg' to='plans@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#owner'><x xmlns='jabber:x:data' type='submit'/></query></iq>");
  await c.until("id=\"cfg\"");
  c.send(`<message to='plans@conference.localhost' type='groupchat'><body>${news}</body></message>`);
  c.send(`<message to='evan@localhost' type='chat' id='m1'><body>${body}</body></message><iq type='get' id='p'><ping xmlns='urn:xmpp:ping'/></iq>`);
  await c.until("id=\"p\"");
  c.close();
}

test("profanity, in tmux, is given a message kept for its user while it was offline and a room's history, across a restart", async () => {
  for (const tool of ["tmux", "profanity"]) {
    try {
      execFileSync("which", [tool], { stdio: "pipe" });
    } catch {
      assert.fail(`no ${tool}: \`make test\` installs Debian's ${tool}`);
    }
  }
  const dir = mkdtempSync(join(tmpdir(), "switchboard-terminal-"));
  const session = `switchboard-profanity-${process.pid}`;
  let server;
  try {
    const dataDir = join(dir, "data");
    for (const [name, password] of [["dora", "doras-secret"], ["evan", "evans-secret"]]) {
      const made = await runSwitchboard(["account", "--data-dir", dataDir, "add", name], { input: `${password}\n` });
      assert.equal(made.code, 0, made.stderr);
    }
    const args = ["--xmpp-listen", "127.0.0.1:0", "--store", "sqlite", "--data-dir", dataDir, "--xmpp-plain-unencrypted", "true"];
    server = await startServer(args);
    const body = "kept for you while you were away";
    const news = "said in the room before the restart";
    await doraSends(await xmppPortOf(server), body, news);
    assert.equal(await server.stop(), 0);
    server = await startServer(args);
    const port = await xmppPortOf(server);

    execFileSync("tmux", ["new-session", "-d", "-s", session, "-x", "160", "-y", "40", "-e", `HOME=${dir}`, "profanity"]);
    await shows(session, "Type '/help'");
    execFileSync("tmux", ["send-keys", "-t", session, `/connect evan@localhost server 127.0.0.1 port ${port} tls disable`, "Enter"]);
    await shows(session, "password");
    execFileSync("tmux", ["send-keys", "-t", session, "evans-secret", "Enter"]);
    await shows(session, "logged in successfully");
    await shows(session, "chat message: dora@localhost");
    execFileSync("tmux", ["send-keys", "-t", session, "/win 2", "Enter"]);
    await shows(session, body);
    execFileSync("tmux", ["send-keys", "-t", session, "/join plans@conference.localhost", "Enter"]);
    await shows(session, news);
  } finally {
    try {
      execFileSync("tmux", ["kill-session", "-t", session], { stdio: "pipe" });
    } catch {
      // Never started.
    }
    if (server) assert.equal(await server.stop(), 0);
    rmSync(dir, { recursive: true, force: true });
  }
});
