// Federation with a client nobody here wrote: two `switchboard serve`
// processes, a.test on 127.0.0.2 and b.test on 127.0.0.3, with certificates
// from an authority made here with openssl and routes to each other;
// slixmpp (PyPI) logs in to each and messages, pings and talks in a room
// across them (conformance/xmpp/slixmpp_federation.py).

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runSwitchboard, startServer } from "./lib.mjs";

const PYTHON = new URL("../build/xmpp/venv/bin/python", import.meta.url).pathname;
const SCRIPT = new URL("./xmpp/slixmpp_federation.py", import.meta.url).pathname;

let dir, ca;
const servers = {};

/** A port free on `host` at the moment. */
function freePort(host) {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, host, () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/** A key and a certificate for `domain` and its MUC service, signed by the authority. */
function certificate(domain) {
  const [key, csr, cert, ext] = ["key", "csr", "pem", "ext"].map((e) => join(dir, `${domain}.${e}`));
  writeFileSync(ext, `subjectAltName=DNS:${domain},DNS:conference.${domain}\n`);
  execFileSync("openssl", ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", `/CN=${domain}`, "-keyout", key, "-out", csr], { stdio: "pipe" });
  execFileSync("openssl", ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", join(dir, "ca.key"), "-CAcreateserial", "-days", "2", "-extfile", ext, "-out", cert], { stdio: "pipe" });
  return { key, cert };
}

/** The server of `domain`, with the account `user` (password pw), its
 *  servers' port on `address`, and a route to `other`. */
async function serve(domain, user, address, other) {
  const made = await runSwitchboard(["xmpp-account", user], { input: "pw\n" });
  assert.equal(made.code, 0, made.stderr);
  const config = join(dir, `${domain}.toml`);
  writeFileSync(config, made.stdout);
  const { key, cert } = certificate(domain);
  const route = `${other.domain}=${other.at},conference.${other.domain}=${other.at}`;
  const server = await startServer(["--xmpp-listen", "127.0.0.1:0", "--config", config, "--xmpp-domain", domain, "--tls-cert", cert, "--tls-key", key,
    "--xmpp-s2s-listen", address, "--xmpp-s2s-trust", ca, "--xmpp-s2s-routes", route]);
  const line = await server.nextLine();
  const m = line.match(/serves XMPP for (\S+) on 127\.0\.0\.1:(\d+)/);
  assert.ok(m && m[1] === domain, `unexpected second line: ${line}`);
  assert.match(await server.nextLine(), new RegExp(`federates ${domain.replace(".", "\\.")} with other XMPP servers on ${address}`));
  return { server, xmppPort: m[2] };
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "switchboard-federation-"));
  ca = join(dir, "ca.pem");
  execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=Switchboard test authority",
    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-keyout", join(dir, "ca.key"), "-out", ca], { stdio: "pipe" });
  const a = `127.0.0.2:${await freePort("127.0.0.2")}`, b = `127.0.0.3:${await freePort("127.0.0.3")}`;
  servers.a = await serve("a.test", "alice", a, { domain: "b.test", at: b });
  servers.b = await serve("b.test", "bob", b, { domain: "a.test", at: a });
});
after(async () => {
  for (const { server } of Object.values(servers)) assert.equal(await server.stop(), 0);
  if (dir) rmSync(dir, { recursive: true });
});

test("slixmpp users of two federated servers message each other, ping the other server and talk in a room of one of them", async () => {
  assert.ok(existsSync(PYTHON), `no ${PYTHON}: run \`make xmpp-clients\` (make test does) to install slixmpp`);
  const proc = spawn(PYTHON, [SCRIPT, servers.a.xmppPort, servers.b.xmppPort, ca], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  proc.stdout.on("data", (d) => (output += d));
  proc.stderr.on("data", (d) => (output += d));
  const code = await new Promise((resolve) => proc.once("exit", resolve));
  assert.equal(code, 0, output);
  assert.match(output, /^8 passed, 0 failed$/m, output);
});
