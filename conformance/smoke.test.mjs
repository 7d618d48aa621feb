// The chat page in a real browser: two tabs in one room see each other,
// over the default transport and with SockJS fallbacks forced by ?transport=.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { launchBrowser, startServer } from "./lib.mjs";

let server, browser;
before(async () => {
  server = await startServer();
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  assert.equal(await server?.stop(), 0);
});

for (const transport of ["", "xhr-polling", "jsonp-polling", "iframe-htmlfile"]) {
  test(`two tabs chat through the demo page (${transport || "default transport"})`, async () => {
    const room = `room-${transport || "default"}`;
    const tab = async (name) => {
      const page = await browser.newPage();
      await page.goto(server.url + "/" + (transport ? `?transport=${transport}` : ""));
      await page.fill("#name", name);
      await page.fill("#room", room);
      await page.click("#join button");
      await page.waitForSelector("#say:not([hidden])");
      return page;
    };
    const alice = await tab("alice");
    const bob = await tab("bob");
    await alice.waitForSelector("text=bob joined");
    await bob.fill("#text", "hello from bob");
    await bob.click("#say button");
    await alice.waitForSelector("#log >> text=hello from bob");
    const members = await alice.locator("#members li").allTextContents();
    assert.deepEqual(members.sort(), ["alice", "bob"]);
    await alice.close();
    await bob.close();
  });
}

test("Chromium agrees permessage-deflate on a native WebSocket and gets its messages back", async () => {
  const page = await browser.newPage();
  await page.goto(server.url + "/");
  const result = await page.evaluate(
    (url) =>
      new Promise((resolve, reject) => {
        const ws = new WebSocket(url);
        const long = "compressible text, again and again; ".repeat(100);
        const got = [];
        ws.onopen = () => {
          ws.send("short");
          ws.send(long);
        };
        ws.onmessage = (e) => {
          got.push(e.data);
          if (got.length === 2) {
            resolve({ extensions: ws.extensions, same: got[0] === "short" && got[1] === long });
            ws.close(1000);
          }
        };
        ws.onerror = () => reject(new Error("WebSocket error"));
      }),
    server.url.replace(/^http/, "ws") + "/echo/websocket",
  );
  assert.equal(result.extensions, "permessage-deflate; server_no_context_takeover");
  assert.ok(result.same, "both messages came back as sent");
  await page.close();
});
