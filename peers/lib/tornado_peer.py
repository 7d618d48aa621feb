"""The Tornado server plumbing both Python peers share (tornado and
sockjs-tornado): plain HTTP GET /healthz and /count/xhr?count=N, and run(),
which parses PORT, builds the routes inside the running IOLoop, serves them on
127.0.0.1:PORT and prints the ready line. Kept apart from apps.py, which stays
transport-free (no Tornado import).
"""

import asyncio
import sys

import tornado.httpserver
import tornado.netutil
import tornado.web

import apps


class CountXhr(tornado.web.RequestHandler):
    def get(self):
        status, body = apps.count_xhr(self.get_query_argument("count", None))
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        self.finish(body)


class Healthz(tornado.web.RequestHandler):
    def get(self):
        self.set_header("Content-Type", "text/plain")
        self.finish("ok")


async def _serve(port, routes):
    # routes() runs inside the IOLoop: sockjs-tornado's routers start their
    # session-expiry timers on the running loop.
    application = tornado.web.Application(routes(), websocket_max_message_size=64 * 1024)
    sockets = tornado.netutil.bind_sockets(port, "127.0.0.1")
    server = tornado.httpserver.HTTPServer(application)
    server.add_sockets(sockets)
    apps.announce(sockets[0].getsockname()[1])
    await asyncio.Event().wait()


def run(routes):
    """Serves `routes()` (a Tornado URL list) on 127.0.0.1:argv[1] until interrupted."""
    try:
        asyncio.run(_serve(apps.parse_port(sys.argv), routes))
    except KeyboardInterrupt:
        pass
