'use strict';
// sockjs-node peer: each Switchboard app is a SockJS service at /<app>
// (so the raw WebSocket endpoint /<app>/websocket comes with it), plus plain
// HTTP /count/xhr?count=N and /healthz on the same node http server.
// Usage: node server.js PORT   (listens on 127.0.0.1:PORT)

const http = require('http');
const sockjs = require('sockjs');
const { APP_NAMES, makeApps, serveHttp, parsePort, announce } = require('../lib/apps');

const port = parsePort(process.argv);
const apps = makeApps();

const server = http.createServer();
// Fallbacks for what no handler below claims.
server.on('request', (req, res) => {
  res.writeHead(404, { 'Content-Type': 'text/plain', 'Content-Length': 9 });
  res.end('not found');
});
server.on('upgrade', (req, socket) => {
  socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
});

for (const name of APP_NAMES) {
  const app = apps[name];
  const service = sockjs.createServer({
    // sockjs logs every request at 'debug'/'info' on stdout by default; keep
    // stdout for the ready line and send only errors to stderr.
    log: (severity, line) => { if (severity === 'error') console.error(line); },
    // Switchboard's SockJS defaults (docs/sockjs.md, options under [sockjs]); these are also sockjs's own.
    heartbeat_delay: 25000,
    disconnect_delay: 5000,
    response_limit: 128 * 1024,
    // Largest WebSocket message faye-websocket accepts (default 64 MiB): the
    // 64 KiB of Switchboard's --max-message-size, as on every peer but socket.io.
    faye_server_options: { maxLength: 64 * 1024 },
  });
  service.on('connection', (conn) => {
    if (!conn) return; // sockjs emits null for a session closed before it opened
    const c = { send: (text) => conn.write(text) };
    app.onOpen(c);
    conn.on('data', (text) => app.onMessage(c, text));
    conn.on('close', () => app.onClose(c));
  });
  service.installHandlers(server, { prefix: '/' + name });
}

// /healthz and /count/xhr first: sockjs's /count prefix would otherwise claim
// /count/xhr (installHandlers' own overshadowing, done once more for ours).
const sockjsListeners = server.listeners('request').slice();
server.removeAllListeners('request');
server.on('request', (req, res) => {
  if (serveHttp(req, res)) return;
  for (const l of sockjsListeners) l.call(server, req, res);
});

server.listen(port, '127.0.0.1', () => announce(server));
