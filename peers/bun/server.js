'use strict';
// bun peer: Bun.serve's WebSocket server (uWebSockets inside), each
// Switchboard app at /<app>/websocket (one text frame = one app message),
// plus plain HTTP /count/xhr?count=N and /healthz. Rooms are Bun's own
// pub/sub topics: a publish is one call into uWebSockets, which writes the
// same frame to every subscriber. Run by start.sh with Bun's binary.
// Usage: bun server.js PORT   (listens on 127.0.0.1:PORT)

const { APP_NAMES, makeApps, countXhr, parsePort } = require('../lib/apps');

const port = parsePort(process.argv);
let server;

// A Room over a Bun topic: members subscribe, a publish goes to all of them.
class TopicRoom {
  constructor(topic) { this.topic = topic; }
  add(conn) { conn.ws.subscribe(this.topic); }
  remove(conn) { conn.ws.unsubscribe(this.topic); }
  publish(text) { server.publish(this.topic, text); }
}

const apps = makeApps((key) => new TopicRoom(key));
const paths = new Map(APP_NAMES.map((name) => ['/' + name + '/websocket', name]));
const text = (status, body, type = 'text/plain') =>
  new Response(body, { status, headers: { 'Content-Type': type, 'Cache-Control': 'no-store' } });

server = Bun.serve({
  hostname: '127.0.0.1',
  port,
  fetch(req, srv) {
    const url = new URL(req.url);
    const app = paths.get(url.pathname);
    if (app) {
      if (srv.upgrade(req, { data: { app, conn: null } })) return undefined;
      return text(400, 'websocket only');
    }
    if (url.pathname === '/healthz') return text(200, 'ok');
    if (url.pathname === '/count/xhr' && req.method === 'GET') {
      const [status, body] = countXhr(url.pathname + url.search);
      return text(status, body, 'application/json');
    }
    return text(404, 'not found');
  },
  websocket: {
    // Switchboard's --max-message-size default; Bun's own defaults otherwise
    // (no permessage-deflate unless asked for).
    maxPayloadLength: 64 * 1024,
    open(ws) {
      ws.data.conn = { ws, send: (t) => ws.send(t) };
      apps[ws.data.app].onOpen(ws.data.conn);
    },
    message(ws, message) {
      if (typeof message !== 'string') { ws.close(1003, 'binary frames are not accepted'); return; }
      apps[ws.data.app].onMessage(ws.data.conn, message);
    },
    close(ws) { apps[ws.data.app].onClose(ws.data.conn); },
  },
});

// The one line the caller waits for (start.sh contract).
process.stdout.write(`listening on http://127.0.0.1:${server.port}/\n`);
