-- The prosody peer's configuration: Debian's /etc/prosody/prosody.cfg.lua
-- (Prosody 0.12.3) with only what peers/prosody/README.md lists changed.
-- start.sh (and install.sh) fill in @C2S_PORT@, @HTTP_PORT@, @DATA@ and
-- @WWW@ and write the result into the instance's own folder; nothing here
-- is read from /etc/prosody.

-- Everything the instance keeps (accounts, rooms, the admin socket) is in
-- its own folder. It runs as whoever starts it, like every peer
-- (run_as_root: mod_posix would refuse root, and prosodyctl would switch to
-- the prosody user, who cannot read this folder). No pidfile.
data_path = "@DATA@"
run_as_root = true
plugin_paths = { }
admins = { }

-- Loopback only: client TCP and plain HTTP (BOSH, WebSocket, /healthz).
-- No server-to-server, no HTTPS, no direct-TLS port.
interfaces = { "127.0.0.1" }
c2s_ports = { @C2S_PORT@ }
c2s_direct_tls_ports = { }
http_interfaces = { "127.0.0.1" }
http_ports = { @HTTP_PORT@ }
https_ports = { }
-- A request whose Host is not a served domain (e.g. 127.0.0.1:PORT) is
-- for localhost.
http_default_host = "localhost"
http_paths = { bosh = "/http-bind", websocket = "/xmpp-websocket", files = "/" }
http_files_dir = "@WWW@"

-- The network. Prosody leaves Nagle's algorithm on: a small write can wait
-- for the previous one's ACK, which the client may delay 40 ms or more
-- (Switchboard and ejabberd set TCP_NODELAY). And it listens with a backlog
-- of 128, which thousands of clients connecting at once can overflow: the
-- kernel drops their SYNs and they retry a second later, timing the
-- backlog rather than the server (1024, Switchboard's, as for ejabberd).
network_settings = {
	nagle = false;
	tcp_backlog = 1024;
}

modules_enabled = {
	-- Debian's list, less limits (10 KiB/s per client), tls (no
	-- certificate: nothing to offer), dialback (no server-to-server) and
	-- the three invites modules (invite-only in-band registration).
	"disco";
	"roster";
	"saslauth";
	"blocklist";
	"bookmarks";
	"carbons";
	"pep";
	"private";
	"smacks";
	"vcard4";
	"vcard_legacy";
	"csi_simple";
	"ping";
	"register";
	"time";
	"uptime";
	"version";
	"admin_adhoc";
	"admin_shell";
	-- Loaded on every POSIX system whether listed or not: SIGTERM shuts
	-- down at once, and it refuses to run as root without run_as_root.
	"posix";
	-- Added: the HTTP transports, and a file for GET /healthz.
	"bosh";
	"websocket";
	"http_files";
}
modules_disabled = {
	"s2s";
}

-- SASL PLAIN over a plain TCP stream on loopback: the bench logs in so.
c2s_require_encryption = false
allow_unencrypted_plain_auth = true
-- No in-band registration, not even by invitation (Debian's default is
-- invite-only, through the invites modules left out above); mod_register
-- stays for password changes.
allow_registration = false

authentication = "internal_hashed"
-- Prosody derives SCRAM keys with 10,000 PBKDF2 iterations; ejabberd and
-- Switchboard with 4096. A PLAIN login costs one PBKDF2, so the same count
-- on all three.
default_iteration_count = 4096

archive_expires_after = "1w"

-- Debian logs info to files (a line per login); warnings and errors to
-- the console here, which start.sh sends to stderr.
log = {
	{ levels = { min = "warn" }, to = "console" };
}

VirtualHost "localhost"

Component "conference.localhost" "muc"
	-- Prosody's defaults: any local user creates a room by joining it, and
	-- the room stays locked until its owner configures it (an empty
	-- submitted form makes an instant room).
	restrict_room_creation = false
	muc_room_locking = true
