'use strict';
// express-cluster peer: the express peer's stack (Express + ws) on Node's
// cluster module, as in the chat study: one worker per core the process may
// run on (os.availableParallelism(), which follows taskset; PEERS_WORKERS=N
// overrides). The workers share the port; the primary accepts connections
// and hands them out round-robin (Node's default on Linux).
//
// Echo and count are answered in the worker. Broadcast and chat members may
// sit on different workers, so their state lives in the primary: a worker
// forwards each connection's open, messages and close over the cluster IPC
// channel; the primary runs the same apps (lib/apps.js) with rooms whose
// members are (worker, connection id) pairs, and sends each published message
// once to every worker with members in the room, with the ids to write it to.
// Usage: node server.js PORT   (listens on 127.0.0.1:PORT)

const cluster = require('cluster');
const http = require('http');
const os = require('os');
const { makeApps, makeExpressApp, mountWebSockets, parsePort } = require('../lib/apps');

const port = parsePort(process.argv);

// A room in the primary: its members grouped by the worker holding them.
class WorkerRoom {
  constructor() { this.byWorker = new Map(); } // worker → Set of connection ids
  add(c) {
    let ids = this.byWorker.get(c.worker);
    if (!ids) { ids = new Set(); this.byWorker.set(c.worker, ids); }
    ids.add(c.id);
  }
  remove(c) {
    const ids = this.byWorker.get(c.worker);
    if (!ids) return;
    ids.delete(c.id);
    if (ids.size === 0) this.byWorker.delete(c.worker);
  }
  publish(text) {
    for (const [w, ids] of this.byWorker) w.send({ t: 'out', ids: [...ids], text });
  }
}

function primary() {
  const workers = Number(process.env.PEERS_WORKERS) || os.availableParallelism();
  const apps = makeApps(() => new WorkerRoom());
  const conns = new Map(); // "workerId:connId" → { worker, id, app, send }
  cluster.on('message', (w, m) => {
    const key = w.id + ':' + m.id;
    if (m.t === 'open') {
      const c = { worker: w, id: m.id, app: m.app, send: (text) => w.send({ t: 'out', ids: [m.id], text }) };
      conns.set(key, c);
      apps[c.app].onOpen(c);
    } else if (m.t === 'msg') {
      const c = conns.get(key);
      if (c) apps[c.app].onMessage(c, m.text);
    } else if (m.t === 'close') {
      const c = conns.get(key);
      if (c) { conns.delete(key); apps[c.app].onClose(c); }
    }
  });
  let listening = 0;
  cluster.on('listening', (w, address) => {
    // Ready once every worker accepts (they share one port, even for port 0).
    if (++listening === workers) process.stdout.write(`listening on http://127.0.0.1:${address.port}/\n`);
  });
  cluster.on('exit', (w, code, signal) => {
    console.error(`worker ${w.process.pid} exited (${signal || code})`);
    for (const [key, c] of conns) if (c.worker === w) { conns.delete(key); apps[c.app].onClose(c); }
  });
  // SIGTERM: stop every worker and exit at once.
  process.on('SIGTERM', () => {
    for (const w of Object.values(cluster.workers)) w.process.kill('SIGTERM');
    process.exit(0);
  });
  for (let i = 0; i < workers; i++) cluster.fork();
}

function worker() {
  const express = require('express');
  const { WebSocketServer } = require('ws');
  const local = makeApps();
  const sockets = new Map(); // connection id → ws
  const viaPrimary = (app) => ({
    onOpen: (c) => { sockets.set(c.id, c.ws); process.send({ t: 'open', app, id: c.id }); },
    onMessage: (c, text) => process.send({ t: 'msg', id: c.id, text }),
    onClose: (c) => { sockets.delete(c.id); process.send({ t: 'close', id: c.id }); },
  });
  const apps = { echo: local.echo, count: local.count, broadcast: viaPrimary('broadcast'), chat: viaPrimary('chat') };
  process.on('message', (m) => {
    if (m.t !== 'out') return;
    for (const id of m.ids) {
      const ws = sockets.get(id);
      if (ws) ws.send(m.text);
    }
  });
  // The primary gone (SIGTERM, crash): nothing left to route rooms through.
  process.on('disconnect', () => process.exit(0));
  let next = 0;
  const server = http.createServer(makeExpressApp(express));
  mountWebSockets(server, apps, WebSocketServer, (ws) => ({ id: ++next, ws, send: (text) => ws.send(text) }));
  server.listen(port, '127.0.0.1');
}

if (cluster.isPrimary) primary(); else worker();
