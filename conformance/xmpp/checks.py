"""What the client scripts here share: named checks, each printed as it
passes or fails, with a count at the end; and the next event a chat-app
WebSocket client is sent."""

import asyncio
import json

# Seconds any one awaited thing may take.
PATIENCE = 20


class Checks:
    """Checks by name: `checks(name, ok, detail)` prints one; `done()` the count."""

    def __init__(self):
        self.results = []

    def __call__(self, name, ok, detail=""):
        self.results.append(ok)
        print(f"{'ok' if ok else 'FAILED'}: {name}{' ' + detail if detail and not ok else ''}", flush=True)

    def done(self):
        """Prints how many passed; whether all did."""
        failed = self.results.count(False)
        print(f"{len(self.results) - failed} passed, {failed} failed", flush=True)
        return failed == 0


async def next_event(ws, **want):
    """The next chat-app event whose fields include `want`."""
    while True:
        event = json.loads(await asyncio.wait_for(ws.recv(), PATIENCE))
        if all(event.get(k) == v for k, v in want.items()):
            return event
