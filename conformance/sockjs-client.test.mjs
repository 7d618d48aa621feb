// The real sockjs-client (npm, 1.6.x) in headless Chromium against
// `switchboard serve`, one transport forced at a time, from a page served on
// a different origin: open, echo awkward text and a 5 KB message, receive a
// broadcast sent by a second client, and close cleanly.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { launchBrowser, servePages, startServer } from "./lib.mjs";

const TRANSPORTS = [
  "websocket",
  "xhr-streaming",
  "xhr-polling",
  "eventsource",
  "iframe-htmlfile",
  "iframe-eventsource",
  "iframe-xhr-polling",
  "jsonp-polling",
];

// The characters browsers mangle, which the server must escape (every range
// of the SockJS escapable set), plus quotes, backslashes, non-BMP text.
function awkwardStrings() {
  const range = (from, to) => {
    let s = "";
    for (let c = from; c <= to; c++) s += String.fromCharCode(c);
    return s;
  };
  return [
    "plain ascii",
    range(0x00, 0x1f),
    range(0x200c, 0x200f) + range(0x2028, 0x202f) + range(0x2060, 0x206f),
    range(0xfff0, 0xffff),
    "quotes \" and \\ backslash and </script> and %41 and \r\n",
    "emoji 😀 and CJK 漢字 and ünïcödé",
    "x".repeat(5 * 1024),
  ];
}

let server, pages, browser;

before(async () => {
  server = await startServer();
  // The test page lives on another origin and loads sockjs-client from the
  // server, as an app embedding Switchboard would.
  pages = await servePages({
    "/": {
      body: `<!doctype html><meta charset="utf-8"><title>sockjs-client test</title>
             <script src="${server.url}/sockjs.min.js"></script>`,
    },
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await pages?.close();
  assert.equal(await server?.stop(), 0);
});

describe("sockjs-client against switchboard serve", () => {
  for (const transport of TRANSPORTS) {
    test(transport, async () => {
      const page = await browser.newPage();
      const errors = [];
      page.on("pageerror", (e) => errors.push(e.message));
      await page.goto(pages.url + "/");
      assert.notEqual(new URL(pages.url).origin, new URL(server.url).origin);

      const result = await page.evaluate(
        async ({ base, transport, messages }) => {
          const timeout = (ms, what) =>
            new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out: ${what}`)), ms));
          const open = (app) =>
            Promise.race([
              new Promise((resolve, reject) => {
                const sock = new SockJS(`${base}/${app}`, null, { transports: [transport] });
                sock.onopen = () => resolve(sock);
                sock.onclose = (e) => reject(new Error(`closed before open: ${e.code} ${e.reason}`));
              }),
              timeout(15000, `open ${app}`),
            ]);
          const receive = (sock, n, what) =>
            Promise.race([
              new Promise((resolve) => {
                const got = [];
                sock.onmessage = (e) => {
                  got.push(e.data);
                  if (got.length === n) resolve(got);
                };
              }),
              timeout(15000, what),
            ]);

          // Echo.
          const echo = await open("echo");
          const used = echo.transport;
          const echoed = receive(echo, messages.length, "echoes");
          for (const m of messages) echo.send(m);
          const echoes = await echoed;

          // Broadcast from a second client, here a native WebSocket.
          const listener = await open("broadcast");
          const heard = receive(listener, 1, "broadcast");
          const wsUrl = base.replace(/^http/, "ws") + "/broadcast/websocket";
          const other = new WebSocket(wsUrl);
          await Promise.race([new Promise((r) => (other.onopen = r)), timeout(15000, "second client")]);
          other.send("hello from another client");
          const [broadcast] = await heard;
          other.close();

          // Clean close.
          const closed = (sock) =>
            Promise.race([
              new Promise((resolve) => (sock.onclose = (e) => resolve({ code: e.code, wasClean: e.wasClean }))),
              timeout(15000, "close"),
            ]);
          const echoClosed = closed(echo);
          echo.close();
          const listenerClosed = closed(listener);
          listener.close();
          return {
            used,
            echoes,
            broadcast,
            close: await echoClosed,
            listenerClose: await listenerClosed,
          };
        },
        { base: server.url, transport, messages: awkwardStrings() },
      );

      assert.equal(result.used, transport, "sockjs-client used the forced transport");
      assert.equal(result.echoes.length, awkwardStrings().length);
      result.echoes.forEach((got, i) => assert.equal(got, awkwardStrings()[i], `echo ${i} survives ${transport}`));
      assert.equal(result.broadcast, "hello from another client");
      assert.deepEqual(result.close, { code: 1000, wasClean: true });
      assert.deepEqual(result.listenerClose, { code: 1000, wasClean: true });
      assert.deepEqual(errors, []);
      await page.close();
    });
  }
});
