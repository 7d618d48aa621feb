"""tornado peer: plain Tornado, the XHR-vs-WebSocket count-down setup.

  GET /xhr?count=N and GET /count/xhr?count=N   → {"count":N-1} (keep-alive)
  ws://…/count/websocket  {"count":N} → {"count":N-1}
and, as they are cheap with the shared apps, echo, broadcast and chat over
native WebSocket at /echo/websocket, /broadcast/websocket, /chat/websocket.
GET /healthz answers ok.

Usage: python server.py PORT   (listens on 127.0.0.1:PORT)
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import tornado.websocket  # noqa: E402
from tornado.iostream import StreamClosedError  # noqa: E402

import apps  # noqa: E402
from tornado_peer import CountXhr, Healthz, run  # noqa: E402


class AppSocket(tornado.websocket.WebSocketHandler):
    """One client of one app over native WebSocket: one text frame = one message."""

    def initialize(self, app):
        self.app = app

    def check_origin(self, origin):
        return True  # any origin, as Switchboard's default origins = ["*:*"]

    def open(self):
        self.set_nodelay(True)
        self.app.on_open(self)

    def on_message(self, message):
        if isinstance(message, bytes):
            self.close(1003, "binary frames are not accepted")
            return
        self.app.on_message(self, message)

    def on_close(self):
        self.app.on_close(self)

    def send(self, text):
        try:
            self.write_message(text)
        except (tornado.websocket.WebSocketClosedError, StreamClosedError):
            pass


def routes():
    urls = [(r"/healthz", Healthz), (r"/count/xhr", CountXhr), (r"/xhr", CountXhr)]
    instances = apps.make_apps()
    for name in apps.APP_NAMES:
        urls.append((r"/%s/websocket" % name, AppSocket, {"app": instances[name]}))
    return urls


if __name__ == "__main__":
    run(routes)
