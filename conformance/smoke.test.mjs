// The chat page in a real browser: two tabs in one room see each other.

import { test } from "node:test";
import assert from "node:assert/strict";
import { launchBrowser, startServer } from "./lib.mjs";

test("two tabs in the same room chat through the demo page", async () => {
  const server = await startServer();
  const browser = await launchBrowser();
  try {
    const tab = async (name) => {
      const page = await browser.newPage();
      await page.goto(server.url + "/");
      await page.fill("#name", name);
      await page.fill("#room", "lobby");
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
  } finally {
    await browser.close();
    assert.equal(await server.stop(), 0);
  }
});
