# Shared by the scripts that run a public suite against `switchboard serve`.

# Returns once something listens on 127.0.0.1:PORT; fails if process PID
# exits first, or after 10 s. A script has no event to await for a port, so
# it looks again every tenth of a second.
wait_for_port() {
    local port=$1 pid=$2
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        kill -0 "$pid" || return 1
        sleep 0.1
    done
    return 1
}
