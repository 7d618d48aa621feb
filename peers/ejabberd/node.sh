# How this peer runs an ejabberd node and talks to it (sourced by
# install.sh, start.sh and ctl.sh). It does what /usr/sbin/ejabberdctl does
# for `foreground` and for its commands, with the instance's own folder in
# place of /etc/ejabberd, /var/lib/ejabberd and /var/log/ejabberd, as the
# calling user (ejabberdctl would su to the ejabberd user, and the PID the
# caller holds would be su's), and without epmd: the node listens for
# ejabberdctl on its own loopback port (-erl_epmd_port), so every instance
# can be ejabberd@localhost, the name its copied database belongs to.

NODE=ejabberd@localhost
# The database install.sh makes (accounts, the room bench), copied by each
# start, and home/.erlang.cookie, the cookie its instances and ejabberdctl
# share (read from HOME, so it is not in the VM's command line).
SEED="$PEERS_DIR/ejabberd/data/seed"
# Where Debian's ejabberdctl finds ejabberd's and its libraries' code.
EJABBERD_ERL_LIBS="$(sed -n "s/^ERL_LIBS='\(.*\)'\$/\1/p" /usr/sbin/ejabberdctl 2>/dev/null || true)"

# node_config DIR HTTP_PORT C2S_PORT — writes DIR/ejabberd.yml (this
# folder's template), DIR/inetrc, DIR/www/healthz and DIR/dist_port (a free
# port for ejabberdctl to reach the node).
node_config() {
  local dir="$1"
  mkdir -p "$dir/www"
  printf 'ok' >"$dir/www/healthz"
  fill_template "$PEERS_DIR/ejabberd/ejabberd.yml" "$dir/ejabberd.yml" \
    HTTP_PORT="$2" C2S_PORT="$3" DOCROOT="$dir/www"
  # Debian's /etc/ejabberd/inetrc: localhost is 127.0.0.1, without asking DNS.
  printf '%s\n' '{lookup,["file","native"]}.' '{host,{127,0,0,1}, ["localhost"]}.' '{file, resolv, "/etc/resolv.conf"}.' >"$dir/inetrc"
  free_port >"$dir/dist_port"
}

# node_env DIR — the environment ejabberdctl gives the VM, for DIR.
node_env() {
  local dir="$1"
  echo EJABBERD_CONFIG_PATH="$dir/ejabberd.yml" EJABBERD_LOG_PATH="$dir/ejabberd.log" \
    ERL_CRASH_DUMP="$dir/erl_crash.dump" ERL_CRASH_DUMP_BYTES=0 ERL_INETRC="$dir/inetrc" \
    ERL_MAX_PORTS=32000 ERL_MAX_ETS_TABLES=1400 ERL_LIBS="$EJABBERD_ERL_LIBS" \
    CONTRIB_MODULES_PATH="$dir/modules" CONTRIB_MODULES_CONF_DIR="$dir/modules/conf" SCRIPT_DIR=/usr/sbin HOME="$SEED/home"
}

# dist_args DIR — Erlang distribution on DIR's loopback port, with no epmd.
dist_args() {
  echo -start_epmd false -erl_epmd_port "$(cat "$1/dist_port")" \
    -kernel inet_dist_use_interface '{127,0,0,1}'
}

# node_exec DIR — execs the node on DIR's configuration and database
# (DIR/db). +K and +P are ejabberdctl's. SIGTERM is given back its default
# action, ending the VM at once (OTP would otherwise run init:stop, which
# takes seconds with many clients).
node_exec() {
  local dir="$1"
  cd "$dir"
  # shellcheck disable=SC2046 # the words of node_env and dist_args are meant to split
  exec env $(node_env "$dir") /usr/bin/erl -sname "$NODE" +K true +P 250000 $(dist_args "$dir") \
    -mnesia dir "\"$dir/db\"" -ejabberd log_rotate_count 0 \
    -eval 'os:set_signal(sigterm, default)' -s ejabberd -noinput
}

# node_ctl DIR COMMAND ARG... — runs an ejabberdctl COMMAND against DIR's
# running node, as ejabberdctl would. Exit status: ejabberdctl's (0 ok).
node_ctl() {
  local dir="$1"
  shift
  # shellcheck disable=SC2046
  env $(node_env "$dir") /usr/bin/erl -sname "ctl$$-$RANDOM@localhost" -hidden -noinput \
    $(dist_args "$dir") -dist_listen false -s ejabberd_ctl -extra "$NODE" --no-timeout "$@"
}
