'use strict';
// ws peer: native WebSocket with the `ws` library, each Switchboard app at
// /<app>/websocket (one text frame = one app message, as in Switchboard),
// plus plain HTTP /count/xhr?count=N and /healthz on the same node http server.
// Usage: node server.js PORT   (listens on 127.0.0.1:PORT)

const http = require('http');
const { WebSocketServer } = require('ws');
const { APP_NAMES, makeApps, serveHttp, parsePort, announce } = require('../lib/apps');

const port = parsePort(process.argv);
const apps = makeApps();

const server = http.createServer((req, res) => {
  if (serveHttp(req, res)) return;
  res.writeHead(404, { 'Content-Type': 'text/plain', 'Content-Length': 9 });
  res.end('not found');
});

// One WebSocketServer per app, sharing the http server's port. ws's defaults
// are kept (no permessage-deflate on the server side, 100 MiB max payload)
// except the payload limit, set to Switchboard's --max-message-size default.
const wss = {};
for (const name of APP_NAMES) {
  const app = apps[name];
  const s = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024, clientTracking: false });
  s.on('connection', (ws) => {
    const c = { send: (text) => ws.send(text) };
    app.onOpen(c);
    ws.on('message', (data, isBinary) => {
      if (isBinary) { ws.close(1003, 'binary frames are not accepted'); return; }
      app.onMessage(c, data.toString());
    });
    ws.on('close', () => app.onClose(c));
    ws.on('error', () => {}); // a bad frame closes the socket; 'close' follows
  });
  wss['/' + name + '/websocket'] = s;
}

server.on('upgrade', (req, socket, head) => {
  const s = wss[req.url.split('?', 1)[0]];
  if (!s) {
    socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
    return;
  }
  s.handleUpgrade(req, socket, head, (ws) => s.emit('connection', ws, req));
});

server.listen(port, '127.0.0.1', () => announce(server));
