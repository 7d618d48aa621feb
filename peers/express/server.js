'use strict';
// express peer: the Node.js stack of the chat study, Express for plain HTTP
// (/healthz, /count/xhr) and the ws library for native WebSocket on the same
// node http server, each Switchboard app at /<app>/websocket.
// Usage: node server.js PORT   (listens on 127.0.0.1:PORT)

const http = require('http');
const express = require('express');
const { WebSocketServer } = require('ws');
const { makeApps, makeExpressApp, mountWebSockets, parsePort, announce } = require('../lib/apps');

const port = parsePort(process.argv);
const server = http.createServer(makeExpressApp(express));
mountWebSockets(server, makeApps(), WebSocketServer);
server.listen(port, '127.0.0.1', () => announce(server));
