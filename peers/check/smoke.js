'use strict';
// Smoke check of one running peer: drives each app it hosts over each
// transport it offers (per peers/peers.json) and prints one verdict line.
// Traffic goes to 127.0.0.1 only; every step is bounded in time.
//
// Usage: node smoke.js PEER PORT [--verbose]
// Exit status: 0 if every check passed, 1 otherwise.

const http = require('http');
const path = require('path');
const WebSocket = require('ws');

const [peerName, portArg] = process.argv.slice(2);
const verbose = process.argv.includes('--verbose');
const manifest = require(path.join(__dirname, '..', 'peers.json'));
const spec = manifest.peers.find((p) => p.name === peerName);
if (!spec || !portArg) {
  console.error('usage: node smoke.js PEER PORT [--verbose]; peers: ' + manifest.peers.map((p) => p.name).join(' '));
  process.exit(2);
}
const HOST = '127.0.0.1';
const PORT = Number(portArg);
const STEP_MS = 3000; // longest wait for any one expected message
const CHECK_MS = 10000; // longest one check may take

// ---------------------------------------------------------------- clients

// Messages in arrival order; next() takes the oldest, waitFor() the first that
// matches (dropping the ones before it).
class Inbox {
  constructor(label) { this.label = label; this.items = []; this.waiter = null; this.closed = null; }
  push(m) {
    if (verbose) console.error(`  ${this.label} <- ${m}`);
    this.items.push(m);
    this.wake();
  }
  close(reason) { this.closed = reason || 'closed'; this.wake(); }
  wake() { if (this.waiter) { const w = this.waiter; this.waiter = null; w(); } }
  async waitFor(pred, what, ms = STEP_MS) {
    const deadline = Date.now() + ms;
    for (;;) {
      while (this.items.length) {
        const m = this.items.shift();
        if (pred(m)) return m;
      }
      if (this.closed) throw new Error(`${this.label}: connection ${this.closed} while waiting for ${what}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`${this.label}: no ${what} within ${ms} ms`);
      await new Promise((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiter = () => { clearTimeout(t); resolve(); };
      });
    }
  }
  next(what = 'message', ms) { return this.waitFor(() => true, what, ms); }
  async expect(text, ms) {
    const got = await this.next(JSON.stringify(text), ms);
    if (got !== text) throw new Error(`${this.label}: expected ${JSON.stringify(text)}, got ${JSON.stringify(got)}`);
  }
}

// `onFrame(frame, ws, inbox)` sees every text frame from the first one on
// (a server may send its first frame in the same packet as the 101).
function openWs(url, label, onFrame = (f, ws, inbox) => inbox.push(f)) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false, handshakeTimeout: STEP_MS });
    const inbox = new Inbox(label);
    ws.on('message', (data) => onFrame(data.toString(), ws, inbox));
    ws.on('close', (code) => inbox.close(`closed (${code})`));
    ws.on('error', (e) => { inbox.close(e.message); reject(new Error(`${label}: ${url}: ${e.message}`)); });
    ws.on('open', () => resolve({ ws, inbox }));
  });
}

// Native WebSocket: one text frame is one app message.
async function rawClient(app, label) {
  const { ws, inbox } = await openWs(`ws://${HOST}:${PORT}${spec.websocket.replace('{app}', app)}`, label);
  return { inbox, send: (t) => ws.send(t), close: () => ws.close() };
}

// SockJS over its websocket transport: o, h, a[...], c[...] frames.
async function sockjsWsClient(app, label) {
  const sid = Math.random().toString(36).slice(2, 10);
  const frames = new Inbox(label + ' (frames)');
  const { ws, inbox } = await openWs(`ws://${HOST}:${PORT}${spec.sockjs.replace('{app}', app)}/000/${sid}/websocket`, label, (f, _ws, inbox) => {
    if (f[0] === 'a') for (const m of JSON.parse(f.slice(1))) inbox.push(m);
    else if (f[0] === 'c') inbox.close('closed by SockJS ' + f);
    else frames.push(f);
  });
  await frames.waitFor((f) => f === 'o', 'SockJS open frame "o"');
  return { inbox, send: (t) => ws.send(JSON.stringify([t])), close: () => ws.close() };
}

// socket.io 4 over engine.io v4's websocket transport, no polling first:
//   GET /socket.io/?EIO=4&transport=websocket   (WebSocket upgrade)
//   <- 0{"sid":...,"pingInterval":...}          engine.io open
//   -> 40/echo,                                  socket.io CONNECT to namespace /echo
//   <- 40/echo,{"sid":...}                       namespace connected
//   -> 42/echo,["message","hi"]                  EVENT "message"
//   <- 42/echo,["message","hi"]
//   <- 2   -> 3                                  engine.io ping / pong
async function socketioClient(app, label) {
  const nsp = spec.socketio.replace('{app}', app);
  const control = new Inbox(label + ' (control)');
  const eventPrefix = `42${nsp},`;
  const { ws, inbox } = await openWs(`ws://${HOST}:${PORT}/socket.io/?EIO=4&transport=websocket`, label, (f, ws, inbox) => {
    if (f === '2') { ws.send('3'); return; }
    if (f.startsWith(eventPrefix)) {
      const [event, payload] = JSON.parse(f.slice(eventPrefix.length));
      if (event === 'message') inbox.push(payload);
      return;
    }
    control.push(f);
  });
  await control.waitFor((f) => f[0] === '0', 'engine.io open packet "0{...}"');
  ws.send(`40${nsp},`);
  const ack = await control.waitFor((f) => f.startsWith(`40${nsp},`) || f.startsWith(`44${nsp},`), `socket.io CONNECT ack "40${nsp},{...}"`);
  if (!ack.startsWith('40')) throw new Error(`${label}: namespace refused: ${ack}`);
  return { inbox, send: (t) => ws.send(eventPrefix + JSON.stringify(['message', t])), close: () => ws.close() };
}

// Centrifugo's client protocol (JSON) over WebSocket at spec.centrifuge, the
// app's room being the channel of that name; app messages travel as JSON
// strings in `data`. A frame holds one or more newline-separated JSON replies:
//   -> {"id":1,"connect":{}}                     <- {"id":1,"connect":{"client":…,"ping":25,"pong":true}}
//   -> {"id":2,"subscribe":{"channel":"broadcast"}}   <- {"id":2,"subscribe":{}}
//   -> {"id":3,"publish":{"channel":"broadcast","data":"hi"}}   <- {"id":3,"publish":{}}
//   <- {"push":{"channel":"broadcast","pub":{"data":"hi"}}}   (to every subscriber, the sender too)
//   <- {}   -> {}                                ping / pong
async function centrifugeClient(app, label) {
  const replies = new Inbox(label + ' (replies)');
  const { ws, inbox } = await openWs(`ws://${HOST}:${PORT}${spec.centrifuge}`, label, (f, ws, inbox) => {
    for (const line of f.split('\n')) {
      if (line === '{}') { ws.send('{}'); continue; }
      const r = JSON.parse(line);
      if (r.push) {
        if (r.push.channel === app && r.push.pub && typeof r.push.pub.data === 'string') inbox.push(r.push.pub.data);
      } else if (r.error) {
        inbox.close(`error reply ${line}`); replies.push(r);
      } else replies.push(r);
    }
  });
  let id = 0;
  const call = async (method, params) => {
    const want = ++id;
    ws.send(JSON.stringify({ id: want, [method]: params }));
    const r = await replies.waitFor((x) => x.id === want, `reply to ${method} (id ${want})`);
    if (r.error) throw new Error(`${label}: ${method} refused: ${JSON.stringify(r.error)}`);
    return r;
  };
  await call('connect', {});
  await call('subscribe', { channel: app });
  return {
    inbox,
    send: (t) => ws.send(JSON.stringify({ id: ++id, publish: { channel: app, data: t } })),
    close: () => ws.close(),
  };
}

// ---------------------------------------------------------------- HTTP

function request(method, urlPath, { body, agent } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: HOST, port: PORT, method, path: urlPath, agent, timeout: STEP_MS }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { data += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: data, reused: req.reusedSocket }));
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${urlPath}: no answer within ${STEP_MS} ms`)));
    req.on('error', reject);
    if (body !== undefined) req.end(body); else req.end();
  });
}

function assert(cond, msg) { if (!cond) throw new Error(msg); }

// ---------------------------------------------------------------- app checks

const tag = () => Math.random().toString(36).slice(2, 8);

async function checkEcho(connect) {
  const c = await connect('echo', 'echo');
  try {
    for (const m of ['hello', 'héllo ✓ "quoted" \\ {"json":1}', 'x'.repeat(4000)]) {
      c.send(m);
      await c.inbox.expect(m);
    }
  } finally { c.close(); }
}

async function checkBroadcast(connect) {
  const a = await connect('broadcast', 'broadcast A');
  const b = await connect('broadcast', 'broadcast B');
  try {
    // Make sure both are subscribed: B's message reaching A proves it.
    const ra = 'ready-a-' + tag();
    const rb = 'ready-b-' + tag();
    a.send(ra);
    await a.inbox.waitFor((m) => m === ra, ra);
    b.send(rb);
    await a.inbox.waitFor((m) => m === rb, rb);
    await b.inbox.waitFor((m) => m === rb, rb);
    // Interleaved senders: both see every message, in one order.
    const sent = [];
    for (let i = 0; i < 5; i++) {
      const ma = `a${i}-${tag()}`; const mb = `b${i}-${tag()}`;
      a.send(ma); b.send(mb); sent.push(ma, mb);
    }
    const want = new Set(sent);
    const seq = async (c) => {
      const got = [];
      while (got.length < sent.length) got.push(await c.inbox.waitFor((m) => want.has(m), `broadcast message ${got.length + 1} of ${sent.length}`));
      return got;
    };
    const [ga, gb] = await Promise.all([seq(a), seq(b)]);
    assert(ga.join() === gb.join(), `the two clients saw different orders: ${ga} vs ${gb}`);
    assert(new Set(ga).size === sent.length, `duplicates or losses: ${ga}`);
  } finally { a.close(); b.close(); }
}

async function checkChat(connect) {
  const room = 'room-' + tag();
  const J = (o) => JSON.stringify(o);
  const alice = await connect('chat', 'chat alice');
  const bob = await connect('chat', 'chat bob');
  const other = await connect('chat', 'chat 3rd');
  try {
    alice.send(J({ name: 'alice', room }));
    await alice.inbox.expect(J({ event: 'members', room, members: ['alice'] }));
    await alice.inbox.expect(J({ event: 'join', name: 'alice', room }));
    bob.send(J({ name: 'bob', room }));
    await bob.inbox.expect(J({ event: 'members', room, members: ['alice', 'bob'] }));
    await bob.inbox.expect(J({ event: 'join', name: 'bob', room }));
    await alice.inbox.expect(J({ event: 'join', name: 'bob', room }));
    // A taken name is an error, and the client stays connected to try again.
    other.send(J({ name: 'alice', room }));
    const err = await other.inbox.next('error for a taken name');
    assert(err === J({ error: `name "alice" is already taken in room "${room}"` }), `taken name: got ${err}`);
    other.send(J({ name: 'carol', room }));
    await other.inbox.expect(J({ event: 'members', room, members: ['alice', 'bob', 'carol'] }));
    await other.inbox.expect(J({ event: 'join', name: 'carol', room }));
    await alice.inbox.expect(J({ event: 'join', name: 'carol', room }));
    await bob.inbox.expect(J({ event: 'join', name: 'carol', room }));
    // A message reaches every member, the sender included.
    const text = 'hi "all" ✓';
    alice.send(J({ message: text }));
    const msg = J({ name: 'alice', room, message: text });
    await Promise.all([alice.inbox.expect(msg), bob.inbox.expect(msg), other.inbox.expect(msg)]);
    // Malformed input: an error, the connection stays open.
    bob.send('not json');
    const bad = await bob.inbox.next('error for malformed input');
    assert(JSON.parse(bad).error, `malformed: got ${bad}`);
    bob.send(J({ message: 'still here' }));
    await bob.inbox.expect(J({ name: 'bob', room, message: 'still here' }));
    // Leaving tells the others.
    bob.close();
    const leave = J({ event: 'leave', name: 'bob', room });
    await alice.inbox.waitFor((m) => m === leave, leave);
    await other.inbox.waitFor((m) => m === leave, leave);
  } finally { alice.close(); bob.close(); other.close(); }
}

async function checkCount(connect) {
  const c = await connect('count', 'count');
  try {
    c.send('{"count":10}');
    await c.inbox.expect('{"count":9}');
    c.send('{"count":1}');
    await c.inbox.expect('{"count":0}');
    c.send('nope');
    const err = await c.inbox.next('error for a malformed count');
    assert(JSON.parse(err).error, `malformed count: got ${err}`);
    c.send('{"count":0}');
    await c.inbox.expect('{"count":-1}');
  } finally { c.close(); }
}

const APP_CHECKS = { echo: checkEcho, broadcast: checkBroadcast, chat: checkChat, count: checkCount };

async function checkHttpCount(p) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const r1 = await request('GET', `${p}?count=5`, { agent });
    assert(r1.status === 200 && r1.body === '{"count":4}', `${p}?count=5: ${r1.status} ${r1.body}`);
    const r2 = await request('GET', `${p}?count=1`, { agent });
    assert(r2.status === 200 && r2.body === '{"count":0}', `${p}?count=1: ${r2.status} ${r2.body}`);
    assert(r2.reused, `${p}: the second request did not reuse the connection (no keep-alive)`);
    const r3 = await request('GET', `${p}?count=x`, { agent });
    assert(r3.status === 400 && JSON.parse(r3.body).error, `${p}?count=x: ${r3.status} ${r3.body}`);
  } finally { agent.destroy(); }
}

async function checkSockjsInfo(app) {
  const r = await request('GET', `${spec.sockjs.replace('{app}', app)}/info`);
  assert(r.status === 200, `/info: status ${r.status}`);
  const info = JSON.parse(r.body);
  assert(info.websocket === true && typeof info.entropy === 'number', `/info: ${r.body}`);
}

// SockJS xhr-polling round trip on /echo: the HTTP fallback path.
async function checkSockjsXhr() {
  const base = `${spec.sockjs.replace('{app}', 'echo')}/000/${tag()}${tag()}`;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  try {
    const open = await request('POST', `${base}/xhr`, { agent });
    assert(open.status === 200 && open.body === 'o\n', `xhr open: ${open.status} ${JSON.stringify(open.body)}`);
    const send = await request('POST', `${base}/xhr_send`, { agent, body: '["xhr ping"]' });
    assert(send.status === 204, `xhr_send: ${send.status} ${send.body}`);
    const poll = await request('POST', `${base}/xhr`, { agent });
    assert(poll.status === 200 && poll.body === 'a["xhr ping"]\n', `xhr poll: ${poll.status} ${JSON.stringify(poll.body)}`);
  } finally { agent.destroy(); }
}

// ---------------------------------------------------------------- run

async function main() {
  const checks = [];
  const add = (name, fn) => checks.push([name, fn]);
  const transports = [];
  if (spec.websocket) transports.push(['ws', rawClient]);
  if (spec.sockjs) transports.push(['sockjs-ws', sockjsWsClient]);
  if (spec.socketio) transports.push(['socket.io', socketioClient]);
  if (spec.centrifuge) transports.push(['centrifuge', centrifugeClient]);
  for (const [tname, connect] of transports) {
    for (const app of spec.apps) add(`${app}/${tname}`, () => APP_CHECKS[app](connect));
  }
  if (spec.sockjs) {
    add('sockjs-info', () => checkSockjsInfo('echo'));
    add('echo/sockjs-xhr', checkSockjsXhr);
  }
  for (const p of spec.http_count || []) add(`http ${p}`, () => checkHttpCount(p));
  if (checks.length === 0) {
    console.log(`${peerName}: FAILED — peers.json names no transport this check knows for it`);
    process.exit(1);
  }
  // The centrifuge peer has no app of ours to reach over HTTP: check its readiness URL.
  if (spec.centrifuge) {
    add('healthz', async () => {
      const r = await request('GET', '/healthz');
      assert(r.status === 200 && r.body === 'ok', `GET /healthz: ${r.status} ${JSON.stringify(r.body)}`);
    });
  }

  const passed = []; const failed = [];
  for (const [name, fn] of checks) {
    let timer;
    try {
      await Promise.race([fn(), new Promise((_, rej) => { timer = setTimeout(() => rej(new Error(`timed out after ${CHECK_MS} ms`)), CHECK_MS); })]);
      passed.push(name);
    } catch (e) {
      failed.push(`${name}: ${e.message}`);
    } finally { clearTimeout(timer); }
  }
  if (failed.length === 0) {
    console.log(`${peerName}: ok — ${passed.length} checks passed (${passed.join(', ')})`);
  } else {
    console.log(`${peerName}: FAILED — ${failed.length} of ${checks.length} checks failed: ${failed.join('; ')}`);
  }
  process.exit(failed.length === 0 ? 0 : 1);
}

main().catch((e) => { console.log(`${peerName}: FAILED — ${e.stack || e}`); process.exit(1); });
