// @xmpp/client 0.14 (npm), which logs in with SASL2, Bind 2 and FAST by
// default: it connects twice with one client object to the server on
// 127.0.0.1:PORT (STARTTLS; the server's certificate is trusted through
// NODE_EXTRA_CA_CERTS), says it is available and sends itself a message each time, and prints one
// JSON line per login: the mechanism it authenticated with, whether it was
// handed a FAST token, the JID it was bound to, whether stream management
// was enabled inline, and the message it got back.
//
// Usage: node xmppjs_fast.mjs PORT USER PASSWORD

// From web/node_modules, where `make test` installs it (web/package.json).
const { client, xml } = await import(new URL("../../web/node_modules/@xmpp/client/index.js", import.meta.url));

const [port, username, password] = process.argv.slice(2);
const xmpp = client({ service: `xmpp://127.0.0.1:${port}`, domain: "localhost", username, password, resource: "fastjs" });
xmpp.on("error", (e) => console.error("error:", e));

let login = {};
xmpp.on("send", (element) => {
  if (element.is("authenticate", "urn:xmpp:sasl:2")) login.mechanism = element.attrs.mechanism;
});
xmpp.on("element", (element) => {
  if (element.is("success", "urn:xmpp:sasl:2")) {
    login.token = !!element.getChild("token", "urn:xmpp:fast:0");
    login.smInline = !!element.getChild("bound", "urn:xmpp:bind:0")?.getChild("enabled", "urn:xmpp:sm:3");
  }
});

// Each wait is bounded; the timer does not keep the process alive once done.
const within = (promise, what) =>
  Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Error(`no ${what} in 20 s`)), 20000).unref())]);

for (const round of [1, 2]) {
  login = { round };
  const echoed = new Promise((resolve) => {
    const onStanza = (stanza) => {
      if (stanza.is("message") && stanza.getChildText("body") === `hello ${round}`) {
        xmpp.removeListener("stanza", onStanza);
        resolve(stanza.getChildText("body"));
      }
    };
    xmpp.on("stanza", onStanza);
  });
  const jid = await within(xmpp.start(), `login ${round}`);
  login.jid = jid.toString();
  // Available, so that a message to its bare JID reaches it.
  await xmpp.send(xml("presence"));
  await xmpp.send(xml("message", { to: jid.bare().toString(), type: "chat" }, xml("body", {}, `hello ${round}`)));
  login.echo = await within(echoed, `message ${round}`);
  console.log(JSON.stringify(login));
  await within(xmpp.stop(), `end ${round}`);
}
