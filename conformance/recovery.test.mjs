// The chat page in Chromium comes back from a dropped connection without a
// gap or a duplicate: the test drops the page's socket, keeps it from
// reconnecting while the server API publishes three messages, then lets it
// back; the page recovers exactly those, each shown once.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { launchBrowser, startServer } from "./lib.mjs";

const KEY = "0123456789abcdef-page";
let server, browser;
before(async () => {
  server = await startServer(["--api-key", KEY]);
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  assert.equal(await server?.stop(), 0);
});

async function publish(text) {
  const res = await fetch(`${server.url}/api/publish`, {
    method: "POST",
    headers: { "X-API-Key": KEY, "Content-Type": "application/json" },
    body: JSON.stringify({ room: "blink", name: "shop", text }),
  });
  assert.equal(res.status, 200, await res.text());
}

async function tab(name) {
  const page = await browser.newPage();
  await page.goto(server.url + "/");
  await page.fill("#name", name);
  await page.fill("#room", "blink");
  await page.click("#join button");
  await page.waitForSelector("#say:not([hidden])");
  return page;
}

test("a page whose connection drops recovers every message it missed, each once", async () => {
  const alice = await tab("alice");
  // Bob keeps the room open while alice is away.
  const bob = await tab("bob");
  await publish("before the drop");
  await alice.waitForSelector("#log >> text=before the drop");

  // No way back for now: sockjs-client asks /chat/info before it connects.
  await alice.route("**/chat/info**", (route) => route.abort());
  // The network goes: the page's WebSocket closes under it.
  await alice.evaluate(() => socket._transport.ws.close());
  await alice.waitForSelector("#status >> text=reconnecting");
  for (const text of ["missed one", "missed two", "missed three"]) await publish(text);
  await bob.waitForSelector("#log >> text=missed three");

  await alice.unroute("**/chat/info**");
  await alice.waitForSelector("#log >> text=reconnected: 3 missed messages recovered");
  const log = await alice.locator("#log li").allTextContents();
  for (const text of ["before the drop", "missed one", "missed two", "missed three"]) {
    assert.equal(log.filter((l) => l === `shop: ${text}`).length, 1, `${text} shown once: ${JSON.stringify(log)}`);
  }
  const order = log.filter((l) => l.startsWith("shop: missed")).map((l) => l.slice(6));
  assert.deepEqual(order, ["missed one", "missed two", "missed three"]);
  await alice.waitForSelector("#say:not([hidden])");
  await alice.close();
  await bob.close();
});
