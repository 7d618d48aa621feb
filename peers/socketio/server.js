'use strict';
// socket.io peer: socket.io 4 (engine.io protocol v4) on socket.io's default
// path /socket.io/, one namespace per Switchboard app (/echo, /broadcast,
// /chat, /count). An app message travels as the event "message" with one
// string argument, both ways. Plain HTTP /count/xhr?count=N and /healthz are
// served on the same port. Wire details for clients: peers/README.md.
// Usage: node server.js PORT   (listens on 127.0.0.1:PORT)

const http = require('http');
const { Server } = require('socket.io');
const { APP_NAMES, makeApps, serveHttp, parsePort, announce } = require('../lib/apps');

const port = parsePort(process.argv);

const server = http.createServer((req, res) => {
  if (serveHttp(req, res)) return;
  res.writeHead(404, { 'Content-Type': 'text/plain', 'Content-Length': 9 });
  res.end('not found');
});

// socket.io's defaults are kept (path /socket.io/, transports polling and
// websocket, pingInterval 25 s, pingTimeout 20 s, maxHttpBufferSize 1 MB, no
// permessage-deflate); it only stops serving its own client bundle.
const io = new Server(server, { serveClient: false });

// Fan-out the socket.io way: members join a socket.io room and a publish is
// one emit to the room (encoded once by the adapter for every member).
class IoRoom {
  constructor(nsp, key) { this.nsp = nsp; this.key = key; }
  add(conn) { conn.socket.join(this.key); }
  remove(conn) { conn.socket.leave(this.key); }
  publish(text) { this.nsp.to(this.key).emit('message', text); }
}

for (const name of APP_NAMES) {
  const nsp = io.of('/' + name);
  const app = makeApps((key) => new IoRoom(nsp, key))[name];
  nsp.on('connection', (socket) => {
    const c = { socket, send: (text) => socket.emit('message', text) };
    app.onOpen(c);
    socket.on('message', (text) => {
      if (typeof text !== 'string') {
        socket.emit('message', JSON.stringify({ error: 'expected the "message" event with one string argument' }));
        return;
      }
      app.onMessage(c, text);
    });
    socket.on('disconnect', () => app.onClose(c));
  });
}

server.listen(port, '127.0.0.1', () => announce(server));
