# How this peer runs a Prosody instance and talks to it (sourced by
# install.sh and start.sh): Debian's /usr/bin/prosody and prosodyctl on a
# configuration of the instance's own folder (this folder's
# prosody.cfg.lua filled in) instead of /etc/prosody, with its data in the
# folder's data/ instead of /var/lib/prosody, as the calling user.

# The data install.sh makes (accounts, the room bench), copied by each start.
SEED="$PEERS_DIR/prosody/data/seed"

# instance_config DIR HTTP_PORT C2S_PORT — writes DIR/prosody.cfg.lua (its
# data in DIR/data), DIR/www/healthz, and an empty DIR/certs (where Prosody
# looks for certificates: none, so no TLS is offered).
instance_config() {
  local dir="$1"
  mkdir -p "$dir/www" "$dir/certs" "$dir/data"
  printf 'ok' >"$dir/www/healthz"
  fill_template "$PEERS_DIR/prosody/prosody.cfg.lua" "$dir/prosody.cfg.lua" \
    HTTP_PORT="$2" C2S_PORT="$3" DATA="$dir/data" WWW="$dir/www"
}

# instance_exec DIR — execs Prosody in the foreground on DIR's configuration.
instance_exec() {
  cd "$1"
  exec /usr/bin/prosody --config "$1/prosody.cfg.lua" -F
}

# instance_shell DIR — `prosodyctl shell` on DIR's running instance (its
# admin socket, DIR/data/prosody.sock), commands read from stdin.
instance_shell() {
  /usr/bin/prosodyctl --config "$1/prosody.cfg.lua" shell
}
