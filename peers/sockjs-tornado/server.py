"""sockjs-tornado peer: each Switchboard app is a SockJS service at /<app>
(so the raw WebSocket endpoint /<app>/websocket comes with it), plus plain
HTTP /count/xhr?count=N and /healthz, all on one Tornado HTTP server.

Usage: python server.py PORT   (listens on 127.0.0.1:PORT)
The same file runs on CPython (peers/sockjs-tornado) and PyPy
(peers/sockjs-tornado-pypy).
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from sockjs.tornado import SockJSConnection, SockJSRouter  # noqa: E402

import apps  # noqa: E402
from tornado_peer import CountXhr, Healthz, run  # noqa: E402

# Switchboard's SockJS defaults (docs/sockjs.md, options under [sockjs]),
# which are also sockjs-tornado's, except the JSESSIONID cookie, which
# Switchboard does not ask for by default.
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


if __name__ == "__main__":
    # run() calls routes() inside the running IOLoop, where the routers start
    # their session-expiry timers.
    run(routes)
