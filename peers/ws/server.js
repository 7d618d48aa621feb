'use strict';
// ws peer: native WebSocket with the `ws` library, each Switchboard app at
// /<app>/websocket (one text frame = one app message, as in Switchboard),
// plus plain HTTP /count/xhr?count=N and /healthz on the same node http server.
// Usage: node server.js PORT   (listens on 127.0.0.1:PORT)

const http = require('http');
const { WebSocketServer } = require('ws');
const { makeApps, serveHttp, mountWebSockets, parsePort, announce } = require('../lib/apps');

const port = parsePort(process.argv);
const apps = makeApps();

const server = http.createServer((req, res) => {
  if (serveHttp(req, res)) return;
  res.writeHead(404, { 'Content-Type': 'text/plain', 'Content-Length': 9 });
  res.end('not found');
});

mountWebSockets(server, apps, WebSocketServer);

server.listen(port, '127.0.0.1', () => announce(server));
