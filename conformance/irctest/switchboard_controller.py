"""irctest's controller for Switchboard: a fresh `switchboard serve` for
every test, as the suite starts every server it knows.

conformance/irctest.sh puts this folder on PYTHONPATH and passes
`--controller switchboard_controller`; SWITCHBOARD_BIN names the binary.
Each test gets its own server on the port the suite picks, with its own
SQLite store in a temporary folder, so accounts made with
`switchboard account add` (the suite's registerUser) are the server's
accounts for SASL. Services (NickServ and its kind) do not exist here:
tests that talk to them fail or skip; tests that only need accounts run.
"""

import atexit
import os
import subprocess
from typing import Optional, Set, Type

from irctest.basecontrollers import BaseServerController, DirectoryBasedController
from irctest.runner import NotImplementedByController
from irctest.specifications import Capabilities, OptionalBehaviors

BIN = os.environ.get("SWITCHBOARD_BIN", "switchboard")

# Every server started here. The suite stops a test's server when the test
# tears its controller down, but some cases end without that, and their
# servers (each in a session of its own) would outlive the run.
STARTED: list = []


@atexit.register
def stop_started() -> None:
    for proc in STARTED:
        if proc.poll() is None:
            proc.terminate()
    for proc in STARTED:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()


class SwitchboardController(BaseServerController, DirectoryBasedController):
    software_name = "Switchboard"
    supported_sasl_mechanisms: Set[str] = {"PLAIN", "SCRAM-SHA-256"}
    supports_sts = False
    capabilities = frozenset(
        {
            Capabilities.ACCOUNT_TAG,
            Capabilities.AWAY_NOTIFY,
            Capabilities.BATCH,
            Capabilities.ECHO_MESSAGE,
            Capabilities.EXTENDED_MONITOR,
            Capabilities.LABELED_RESPONSE,
            Capabilities.MESSAGE_TAGS,
            Capabilities.MULTI_PREFIX,
            Capabilities.MULTILINE,
            Capabilities.SERVER_TIME,
            Capabilities.SETNAME,
        }
    )
    optional_behaviors = frozenset({OptionalBehaviors.BAN_EXCEPTION_MODE, OptionalBehaviors.INVITE_EXCEPTION_MODE})

    def run(
        self,
        hostname: str,
        port: int,
        *,
        password: Optional[str],
        ssl: bool,
        run_services: bool,
        faketime: Optional[str],
        websocket_hostname: Optional[str],
        websocket_port: Optional[int],
    ) -> None:
        # IRC over WebSocket is at /irc-websocket, text only; the suite's
        # client asks for the root path and for binary.ircv3.net.
        if websocket_hostname is not None or websocket_port is not None:
            raise NotImplementedByController("Websocket")
        if ssl:
            raise NotImplementedByController("TLS")
        # REGISTER asks for no email (draft/account-registration).
        if self.test_config.account_registration_requires_email:
            raise NotImplementedByController("email-required registration")
        assert self.proc is None
        self.port = port
        self.hostname = hostname
        self.create_config()
        assert self.directory
        command = [
            BIN,
            "serve",
            "--listen", "127.0.0.1:0",
            "--xmpp-listen", "off",
            "--xmpp-s2s-listen", "off",
            "--irc-listen", f"{hostname}:{port}",
            "--irc-server-name", "My.Little.Server",
            "--irc-server-description", "test server",
            "--irc-operators", "operuser:operpassword",
            "--store", "sqlite",
            "--data-dir", str(self.directory),
            "--room-history", "0",
            "--max-message-rate", "100000",
            "--max-byte-rate", "100000000",
            # The suite talks over plain TCP on the loopback interface.
            "--xmpp-plain-unencrypted", "true",
            # Its account-registration tests make accounts with REGISTER.
            "--xmpp-registration", "1000",
        ]
        if password is not None:
            command += ["--irc-password", password]
        self.proc = self.execute(command)
        STARTED.append(self.proc)

    def wait_for_services(self) -> None:
        # There are none: accounts are made with `switchboard account add`.
        pass

    def registerUser(self, case, username: str, password: Optional[str] = None) -> None:  # type: ignore[no-untyped-def]
        if password is None:
            raise NotImplementedByController("an account without a password")
        assert self.directory
        subprocess.run(
            [BIN, "account", "add", username],
            input=f"{password}\n".encode(),
            env={**os.environ, "SWITCHBOARD_STORE": "sqlite", "SWITCHBOARD_DATA_DIR": str(self.directory)},
            check=True,
            stdout=subprocess.DEVNULL,
        )


def get_irctest_controller_class() -> Type[SwitchboardController]:
    return SwitchboardController
