# tests/distccd.sh : sourced by tests/launchers.sh and bench/builder/run.sh. Two distcc
# daemons on 127.0.0.1, one job each, so that a build through --launcher=distcc is visibly
# spread over both (each logs every compile it ran).
#   distccd_start DIR : starts them, logs DIR/PORT.log; exports DISTCC_HOSTS (the two daemons
#                       and no localhost, so that whatever distcc can send goes to them),
#                       DISTCC_DIR and DISTCC_FALLBACK=0 (a compile that should have gone
#                       out and did not fails instead of quietly running here)
#   distccd_stop DIR  : stops them
#   distccd_compiles DIR : the compiles each daemon completed, "N1 N2"

distccd_start() {
    mkdir -p "$1/client" && chmod 1777 "$1" || return 1
    base=$((20000 + $$ % 20000))
    hosts=""
    for port in $base $((base + 1)); do
        # distccd started by root drops to the distccd user: its log must be writable by it
        : >"$1/$port.log" && chmod 666 "$1/$port.log" || return 1
        distccd --daemon --listen 127.0.0.1 --port "$port" --allow 127.0.0.1 --jobs 1 \
            --log-file "$1/$port.log" --log-level info --pid-file "$1/$port.pid" || return 1
        for _ in 1 2 3 4 5 6 7 8 9 10; do [ -s "$1/$port.pid" ] && break; sleep 0.2; done
        [ -s "$1/$port.pid" ] || return 1
        hosts="$hosts 127.0.0.1:$port/1"
    done
    export DISTCC_HOSTS="${hosts# }" DISTCC_DIR="$1/client" DISTCC_FALLBACK=0
}

distccd_stop() {
    for pid in "$1"/*.pid; do [ -s "$pid" ] && kill "$(cat "$pid")" 2>/dev/null; rm -f "$pid"; done
    return 0
}

distccd_compiles() {
    for log in "$1"/*.log; do printf '%s ' "$(grep -c COMPILE_OK "$log")"; done
}
