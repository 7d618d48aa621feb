'use strict';
// The four Switchboard apps (echo, broadcast, chat, count) for the Node peers,
// with Switchboard's exact message formats (docs/apps.md, "Apps and message
// formats"; crates/wire/src/app.rs). Transport-free: a peer's server hands each
// app a `conn` ({ send(text) }) and calls onOpen / onMessage / onClose.
//
// Fan-out goes through a Room so a peer can use its own idiomatic broadcast
// (socket.io: one encode per emit to a socket.io room); the default Room
// writes to each member in turn, which is what sockjs-node and ws apps do.

const MAX_NAME_LEN = 64;

class Room {
  constructor() { this.conns = new Set(); }
  add(conn) { this.conns.add(conn); }
  remove(conn) { this.conns.delete(conn); }
  publish(text) { for (const c of this.conns) c.send(text); }
}

function errorJson(message) { return JSON.stringify({ error: message }); }

// An object with exactly `keys` whose values are all strings, or null.
function strictObject(text, keys) {
  let v;
  try { v = JSON.parse(text); } catch (_) { return null; }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return null;
  const got = Object.keys(v);
  if (got.length !== keys.length) return null;
  for (const k of keys) if (!Object.prototype.hasOwnProperty.call(v, k)) return null;
  return v;
}

// Answers {"count":N} with {"count":N-1}, or {"error":...}. Shared with the
// HTTP /count/xhr handlers via countAnswer().
function countAnswer(n) {
  if (!Number.isSafeInteger(n) || !Number.isSafeInteger(n - 1)) return { ok: false, body: errorJson('count out of range') };
  return { ok: true, body: '{"count":' + (n - 1) + '}' };
}

function countMessage(text) {
  const v = strictObject(text, ['count']);
  if (!v || typeof v.count !== 'number' || !Number.isInteger(v.count)) {
    return errorJson('malformed message: expected {"count":N}');
  }
  return countAnswer(v.count).body;
}

// GET /count/xhr?count=N → [status, body]
function countXhr(url) {
  const q = url.indexOf('?');
  const params = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  const raw = params.get('count');
  if (raw === null) return [400, errorJson('malformed message: expected ?count=N')];
  if (!/^[+-]?\d+$/.test(raw)) return [400, errorJson(`malformed message: count ${JSON.stringify(raw)} is not an integer`)];
  const r = countAnswer(Number(raw));
  return [r.ok ? 200 : 400, r.body];
}

const utf8Len = (s) => Buffer.byteLength(s, 'utf8');

class EchoApp {
  onOpen() {}
  onMessage(conn, text) { conn.send(text); }
  onClose() {}
}

class BroadcastApp {
  constructor(makeRoom) { this.room = makeRoom('broadcast'); }
  onOpen(conn) { this.room.add(conn); }
  onMessage(conn, text) { this.room.publish(text); }
  onClose(conn) { this.room.remove(conn); }
}

class CountApp {
  onOpen() {}
  onMessage(conn, text) { conn.send(countMessage(text)); }
  onClose() {}
}

class ChatApp {
  constructor(makeRoom) {
    this.makeRoom = makeRoom;
    this.rooms = new Map(); // room name → { room: Room, names: Map<name, conn> }
    this.joined = new Map(); // conn → { name, room }
  }
  onOpen() {}
  onMessage(conn, text) {
    const me = this.joined.get(conn);
    if (!me) return this.join(conn, text);
    const v = strictObject(text, ['message']);
    if (!v || typeof v.message !== 'string') {
      return conn.send(errorJson('malformed message: expected {"message":"..."}'));
    }
    this.rooms.get(me.room).room.publish(JSON.stringify({ name: me.name, room: me.room, message: v.message }));
  }
  join(conn, text) {
    const v = strictObject(text, ['name', 'room']);
    if (!v || typeof v.name !== 'string' || typeof v.room !== 'string') {
      return conn.send(errorJson('malformed message: expected {"name":"...","room":"..."}'));
    }
    for (const field of ['name', 'room']) {
      const len = utf8Len(v[field]);
      if (len < 1 || len > MAX_NAME_LEN) return conn.send(errorJson(`invalid ${field}: must be 1 to ${MAX_NAME_LEN} bytes`));
    }
    const { name, room } = v;
    let r = this.rooms.get(room);
    if (r && r.names.has(name)) {
      return conn.send(errorJson(`name ${JSON.stringify(name)} is already taken in room ${JSON.stringify(room)}`));
    }
    if (!r) { r = { room: this.makeRoom('chat:' + room), names: new Map() }; this.rooms.set(room, r); }
    r.names.set(name, conn);
    r.room.add(conn);
    this.joined.set(conn, { name, room });
    conn.send(JSON.stringify({ event: 'members', room, members: [...r.names.keys()] }));
    r.room.publish(JSON.stringify({ event: 'join', name, room }));
  }
  onClose(conn) {
    const me = this.joined.get(conn);
    if (!me) return;
    this.joined.delete(conn);
    const r = this.rooms.get(me.room);
    r.names.delete(me.name);
    r.room.remove(conn);
    if (r.names.size === 0) { this.rooms.delete(me.room); return; }
    r.room.publish(JSON.stringify({ event: 'leave', name: me.name, room: me.room }));
  }
}

const APP_NAMES = ['echo', 'broadcast', 'chat', 'count'];

// One instance of each app. `makeRoom(key)` builds a Room (default: a Set).
function makeApps(makeRoom = () => new Room()) {
  return {
    echo: new EchoApp(),
    broadcast: new BroadcastApp(makeRoom),
    chat: new ChatApp(makeRoom),
    count: new CountApp(),
  };
}

// The plain-HTTP part every Node peer shares: /healthz and /count/xhr.
// Returns true if it answered the request.
function serveHttp(req, res) {
  const path = req.url.split('?', 1)[0];
  if (path === '/healthz') {
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': 2 });
    res.end('ok');
    return true;
  }
  if (path === '/count/xhr' && req.method === 'GET') {
    const [status, body] = countXhr(req.url);
    res.writeHead(status, {
      'Content-Type': 'application/json',
      'Cache-Control': 'no-store',
      'Content-Length': Buffer.byteLength(body),
    });
    res.end(body);
    return true;
  }
  return false;
}

// Serves each app at /<app>/websocket on `server` with the `ws` library's
// WebSocketServer class (passed in: each peer has its own pinned ws). ws's
// defaults are kept (no permessage-deflate on the server side) except the
// payload limit, set to Switchboard's --max-message-size default (ws: 100 MiB).
// `makeConn(ws)` may wrap a socket (the cluster peer tags it with an id).
function mountWebSockets(server, apps, WebSocketServer, makeConn = (ws) => ({ send: (text) => ws.send(text) })) {
  const wss = {};
  for (const name of APP_NAMES) {
    const app = apps[name];
    const s = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024, clientTracking: false });
    s.on('connection', (ws) => {
      const c = makeConn(ws);
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
}

// The Express peers' HTTP side: an Express app (the `express` function of the
// peer's own pinned install) answering /healthz and /count/xhr.
function makeExpressApp(express) {
  const app = express();
  app.get('/healthz', (req, res) => res.type('text/plain').send('ok'));
  app.get('/count/xhr', (req, res) => {
    const [status, body] = countXhr(req.originalUrl);
    res.status(status).set('Cache-Control', 'no-store').type('application/json').send(body);
  });
  return app;
}

function parsePort(argv) {
  const port = Number(argv[2] || process.env.PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`usage: ${argv[1]} PORT`);
    process.exit(2);
  }
  return port;
}

function announce(server) {
  const { port } = server.address();
  // The one line the caller waits for (start.sh contract).
  process.stdout.write(`listening on http://127.0.0.1:${port}/\n`);
}

module.exports = { APP_NAMES, Room, makeApps, serveHttp, countXhr, mountWebSockets, makeExpressApp, parsePort, announce };
