// Shared by the browser conformance tests: start `switchboard serve` (or any
// switchboard command) on a free port, launch Debian's Chromium through
// playwright-core, and serve a page from a second origin.
//
// The tests run under `node --test conformance/`; `make test` builds the
// binary, installs Chromium and the npm packages, and sets SWITCHBOARD_BIN.

import { execFileSync, spawn } from "node:child_process";
import { createRequire } from "node:module";
import http from "node:http";
import readline from "node:readline";

const require = createRequire(new URL("../web/package.json", import.meta.url));
const { chromium } = require("playwright-core");

export const BIN = process.env.SWITCHBOARD_BIN ?? new URL("../target/debug/switchboard", import.meta.url).pathname;
export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

/** Runs `switchboard serve` on 127.0.0.1:0 and resolves once it listens. */
export async function startServer(extraArgs = []) {
  // XMPP listens on 5222 unless told otherwise: only where a test asks for it.
  const xmpp = extraArgs.includes("--xmpp-listen") ? [] : ["--xmpp-listen", "off"];
  // Nor for other servers on 5269, which a certificate would open.
  const s2s = extraArgs.includes("--xmpp-s2s-listen") ? [] : ["--xmpp-s2s-listen", "off"];
  // Nor IRC on 6667 and 6697.
  const irc = extraArgs.includes("--irc-listen") ? [] : ["--irc-listen", "off", "--irc-tls-listen", "off"];
  // Nothing kept between runs unless a test asks for a store.
  const store = extraArgs.includes("--store") ? [] : ["--store", "memory"];
  const proc = spawn(BIN, ["serve", "--listen", "127.0.0.1:0", ...xmpp, ...s2s, ...irc, ...store, ...extraArgs], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  // Every line the server prints, kept until a caller takes it.
  const printed = [], waiting = [];
  readline.createInterface({ input: proc.stdout }).on("line", (line) => {
    const taker = waiting.shift();
    taker ? taker(line) : printed.push(line);
  });
  const nextLine = () => (printed.length ? Promise.resolve(printed.shift()) : new Promise((resolve) => waiting.push(resolve)));
  const url = await new Promise((resolve, reject) => {
    proc.once("exit", (code) => reject(new Error(`switchboard serve exited with ${code}`)));
    nextLine().then((line) => {
      const m = line.match(/listening on (https?:\/\/[^/\s]+)\//);
      m ? resolve(m[1]) : reject(new Error(`unexpected first line: ${line}`));
    });
  });
  return {
    url,
    proc,
    /** The next line the server prints. */
    nextLine,
    async stop() {
      if (proc.exitCode !== null) return proc.exitCode;
      const exited = new Promise((resolve) => proc.once("exit", (code, signal) => resolve(code ?? signal)));
      proc.kill("SIGTERM");
      return exited;
    },
  };
}

/** Runs a switchboard command to completion: { code, stdout, stderr };
 *  `options.input` is written to its standard input. */
export function runSwitchboard(args, options = {}) {
  const { input, ...spawnOptions } = options;
  return new Promise((resolve, reject) => {
    const proc = spawn(BIN, args, { stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"], ...spawnOptions });
    if (input !== undefined) proc.stdin.end(input);
    let stdout = "", stderr = "";
    proc.stdout.on("data", (d) => (stdout += d));
    proc.stderr.on("data", (d) => (stderr += d));
    proc.once("error", reject);
    proc.once("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

/** Launches headless Chromium with the flags this machine needs. */
export function launchBrowser() {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
      "--disable-background-networking", "--disable-component-update",
      "--disable-sync", "--no-first-run",
    ],
  });
}

/** Serves `pages` ({path: {type, body}}) from 127.0.0.1 on a free port: a
 *  second origin, so pages loaded from it talk to the server cross-origin. */
export async function servePages(pages) {
  const server = http.createServer((req, res) => {
    const page = pages[new URL(req.url, "http://x").pathname];
    if (!page) { res.writeHead(404).end(); return; }
    res.writeHead(200, { "content-type": page.type ?? "text/html; charset=utf-8" }).end(page.body);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** What the tmux session `name` shows now. */
export function screen(name) {
  return execFileSync("tmux", ["capture-pane", "-p", "-t", name], { encoding: "utf8" });
}

/** Resolves once the screen of tmux session `name` shows `text`, within `patience` ms. */
export async function shows(name, text, patience = 20000) {
  const deadline = Date.now() + patience;
  for (;;) {
    const now = screen(name);
    if (now.includes(text)) return now;
    if (Date.now() > deadline) throw new Error(`the screen never showed ${JSON.stringify(text)}:\n${now}`);
    // The screen has no event to await: look again shortly, within the deadline.
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
