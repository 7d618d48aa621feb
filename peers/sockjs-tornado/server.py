"""sockjs-tornado peer: each Switchboard app is a SockJS service at /<app>
(so the raw WebSocket endpoint /<app>/websocket comes with it), plus plain
HTTP /count/xhr?count=N and /healthz, all on one Tornado HTTP server.

Usage: python server.py PORT   (listens on 127.0.0.1:PORT)
The same file runs on CPython (peers/sockjs-tornado) and PyPy
(peers/sockjs-tornado-pypy).
"""

import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import tornado.httpserver  # noqa: E402
import tornado.netutil  # noqa: E402
import tornado.web  # noqa: E402
from sockjs.tornado import SockJSConnection, SockJSRouter  # noqa: E402

import apps  # noqa: E402

# Switchboard's SockJS defaults (README, [sockjs]), which are also
# sockjs-tornado's, except the JSESSIONID cookie, which Switchboard does not ask
# for by default.
SOCKJS_SETTINGS = {
    "heartbeat_delay": 25,
    "disconnect_delay": 5,
    "response_limit": 128 * 1024,
    "jsessionid": False,
    # Accept polling requests from any address, as a load generator with many
    # source addresses needs.
    "verify_ip": False,
}


class SockJSRoom(apps.Room):
    """Fan-out the sockjs-tornado way: SockJSRouter.broadcast encodes the
    message once for all SockJS sessions."""

    def __init__(self, key, router_ref):
        apps.Room.__init__(self, key)
        self.router_ref = router_ref

    def publish(self, text):
        self.router_ref[0].broadcast(list(self.conns), text)


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


def connection_class(app):
    class Conn(SockJSConnection):
        def on_open(self, info):
            app.on_open(self)

        def on_message(self, message):
            app.on_message(self, message)

        def on_close(self):
            app.on_close(self)

    return Conn


def routes():
    urls = [(r"/healthz", Healthz), (r"/count/xhr", CountXhr)]
    for name in apps.APP_NAMES:
        router_ref = []
        app = apps.make_apps(lambda key: SockJSRoom(key, router_ref))[name]
        router = SockJSRouter(connection_class(app), "/" + name, SOCKJS_SETTINGS)
        router_ref.append(router)
        urls.extend(router.urls)
    return urls


async def main(port):
    # Routers start their session-expiry timers on the running IOLoop, so
    # they are built inside it.
    application = tornado.web.Application(routes(), websocket_max_message_size=64 * 1024)
    sockets = tornado.netutil.bind_sockets(port, "127.0.0.1")
    server = tornado.httpserver.HTTPServer(application)
    server.add_sockets(sockets)
    apps.announce(sockets[0].getsockname()[1])
    await asyncio.Event().wait()


if __name__ == "__main__":
    try:
        asyncio.run(main(apps.parse_port(sys.argv)))
    except KeyboardInterrupt:
        pass
