#!/usr/bin/env bash
# busy.sh - keep-alive latency of sluice and its peers on an idle machine
# and on one whose cores are shared with a controlled competing load.
#
# Usage: bench/busy.sh [--conds "idle cpu2 cpu4"] [--runs 3] [--secs 3] [--conns 100] [--size 151] SERVER...
#
# Each SERVER is a sluice binary (started as `BIN serve --root DIR`, with
# SLUICE_ENV, if set, added to its environment) or one of nginx, h2o,
# lighttpd (one worker each, tuned as in bench/builds.sh and bench/peers).
# Every server is pinned to core 1 and wrk (-t1 -c CONNS --latency, one
# SIZE-byte file) to core 0. For each condition the servers take turns,
# one run of --secs each, --runs times (A, B, A, B, ...), so drifting
# background load hits all alike. The conditions: idle (nothing added);
# cpuN, N busy loops (`while :; do :; done`, nice 0, not pinned, so they
# compete on both cores with the server and with wrk); memN, N loops that
# stream over 64 MiB each (cache and memory bandwidth, needs cc); forkN,
# N loops that start /bin/true one after another (short processes coming
# and going); goN, N loops of `go build -a std`, each in a session of
# its own as another user's build would be (bursty, many threads and
# processes, memory-heavy; needs go; the kernel shares CPU between
# sessions before threads, see sched_autogroup_enabled). Per
# condition and server it prints the medians of wrk's p50 and p99 latency,
# requests/s, server CPU-µs per request (utime+stime from /proc/PID/stat
# ÷ requests), and the server's context switches per 1,000 requests
# summed over its threads (voluntary: it slept; involuntary: the kernel
# took the core from it), its thread count, and every run's p99.
# docs/benchmarks.md, "On a busy machine", has what it found.
#
# Needs: wrk taskset awk, and the peers named; cc for memN, go for goN.
set -euo pipefail
# Run as root (as benchmarks here often are), sluice refuses to serve
# without a user to switch to unless told so.
export SLUICE_ALLOW_ROOT=1

CONDS="idle cpu2 cpu4"
RUNS=3
SECS=3
CONNS=100
SIZE=151
SERVERS=()
while [[ $# -gt 0 ]]; do
	case "$1" in
	--conds) CONDS="$2"; shift 2 ;;
	--runs) RUNS="$2"; shift 2 ;;
	--secs) SECS="$2"; shift 2 ;;
	--conns) CONNS="$2"; shift 2 ;;
	--size) SIZE="$2"; shift 2 ;;
	-h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "busy.sh: unknown option $1" >&2; exit 2 ;;
	*) SERVERS+=("$1"); shift ;;
	esac
done
[[ ${#SERVERS[@]} -gt 0 ]] || { echo "busy.sh: name at least one server" >&2; exit 2; }

WORK=$(mktemp -d /tmp/sluice-busy.XXXXXX)
chmod 755 "$WORK"
mkdir -p "$WORK/root"
head -c "$SIZE" /dev/zero | tr '\0' x >"$WORK/root/f.html"
chmod 644 "$WORK/root/f.html"
declare -A PORT PID
HOGS=()
GROUPS_=() # process groups of hogs in a session of their own
stop_hogs() {
	for h in "${HOGS[@]}"; do kill "$h" 2>/dev/null || true; done
	for g in "${GROUPS_[@]}"; do kill -- "-$g" 2>/dev/null || true; done
	for h in "${HOGS[@]}" "${GROUPS_[@]}"; do wait "$h" 2>/dev/null || true; done
	HOGS=()
	GROUPS_=()
}
cleanup() {
	stop_hogs
	for p in "${PID[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT

if [[ $CONDS == *mem* ]]; then
	cat >"$WORK/memhog.c" <<'C'
#include <stdlib.h>
int main(void) {
	size_t n = 64u << 20;
	volatile char *p = malloc(n);
	for (unsigned v = 0;; v++)
		for (size_t i = 0; i < n; i += 64) p[i] += v;
}
C
	cc -O2 -o "$WORK/memhog" "$WORK/memhog.c"
fi

port=$((21000 + RANDOM % 9000))
for s in "${SERVERS[@]}"; do
	port=$((port + 1))
	PORT[$s]=$port
	d="$WORK/srv$port"
	mkdir -p "$d"
	case "$s" in
	nginx)
		cat >"$d/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $d/nginx.pid; error_log $d/error.log warn;
events { worker_connections 20000; use epoll; multi_accept on; }
http { access_log off; sendfile on; tcp_nopush on; tcp_nodelay on; keepalive_timeout 120s; keepalive_requests 1000000;
  open_file_cache max=1000 inactive=20s; open_file_cache_valid 60s; server_tokens off; types { text/html html; }
  client_body_temp_path $d/cb; proxy_temp_path $d/p; fastcgi_temp_path $d/f; uwsgi_temp_path $d/u; scgi_temp_path $d/s;
  server { listen 127.0.0.1:$port backlog=4096; root $WORK/root; } }
CONF
		taskset -c 1 nginx -c "$d/nginx.conf" >/dev/null 2>&1 &
		;;
	h2o)
		cat >"$d/h2o.conf" <<CONF
num-threads: 1
max-connections: 20000
error-log: $d/error.log
http1-request-timeout: 120
listen:
  host: 127.0.0.1
  port: $port
hosts:
  default:
    paths:
      /:
        file.dir: $WORK/root
CONF
		taskset -c 1 h2o -c "$d/h2o.conf" >/dev/null 2>&1 &
		;;
	lighttpd)
		cat >"$d/lighttpd.conf" <<CONF
server.document-root = "$WORK/root"
server.bind = "127.0.0.1"
server.port = $port
server.errorlog = "$d/error.log"
server.modules = ()
server.max-worker = 0
server.max-fds = 20000
server.max-connections = 10000
server.listen-backlog = 4096
server.max-keep-alive-requests = 1000000
server.max-keep-alive-idle = 120
server.max-read-idle = 120
server.stat-cache-engine = "simple"
mimetype.assign = ( ".html" => "text/html" )
CONF
		taskset -c 1 lighttpd -D -f "$d/lighttpd.conf" >/dev/null 2>&1 &
		;;
	*)
		# shellcheck disable=SC2086 # SLUICE_ENV is a list of NAME=VALUE
		env ${SLUICE_ENV:-} taskset -c 1 "$s" serve --root "$WORK/root" --listen "127.0.0.1:$port" >/dev/null 2>&1 &
		;;
	esac
	PID[$s]=$!
done
sleep 1
for s in "${SERVERS[@]}"; do
	kill -0 "${PID[$s]}" 2>/dev/null || { echo "busy.sh: $s did not start" >&2; exit 1; }
done

ticks() { local s; s=$(cat "/proc/$1/stat"); s=${s##*) }; set -- $s; echo $((${12} + ${13})); }
# switches prints the voluntary and involuntary context switches summed
# over the threads of process $1.
switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt/ {v += $2} /^nonvoluntary_ctxt/ {n += $2} END {print v + 0, n + 0}'; }
threads() { ls "/proc/$1/task" | wc -l; }

start_hogs() {
	local c=$1 n
	case "$c" in
	idle) ;;
	cpu*) n=${c#cpu}; for _ in $(seq "$n"); do sh -c 'while :; do :; done' & HOGS+=($!); done ;;
	mem*) n=${c#mem}; for _ in $(seq "$n"); do "$WORK/memhog" & HOGS+=($!); done ;;
	go*) n=${c#go}; for i in $(seq "$n"); do
		GOCACHE="$WORK/gocache$i" GOFLAGS= setsid sh -c 'while :; do go build -a std >/dev/null 2>&1; done' &
		GROUPS_+=($!)
	done ;;
	fork*) n=${c#fork}; for _ in $(seq "$n"); do sh -c 'while :; do /bin/true; done' & HOGS+=($!); done ;;
	*) echo "busy.sh: unknown condition $c" >&2; exit 2 ;;
	esac
}

CLK=$(getconf CLK_TCK)
wrk_args=(-t1 "-c$CONNS" --latency)
for s in "${SERVERS[@]}"; do taskset -c 0 wrk "${wrk_args[@]}" -d1s "http://127.0.0.1:${PORT[$s]}/f.html" >/dev/null; done
: >"$WORK/runs"
for c in $CONDS; do
	start_hogs "$c"
	sleep 0.5
	for _ in $(seq "$RUNS"); do
		for s in "${SERVERS[@]}"; do
			p=${PID[$s]}
			t0=$(ticks "$p"); read -r v0 n0 < <(switches "$p")
			out=$(taskset -c 0 wrk "${wrk_args[@]}" -d"${SECS}s" "http://127.0.0.1:${PORT[$s]}/f.html")
			t1=$(ticks "$p"); read -r v1 n1 < <(switches "$p")
			echo "$out" | awk -v c="$c" -v s="$s" -v dt=$((t1 - t0)) -v hz="$CLK" \
				-v vcs=$((v1 - v0)) -v ncs=$((n1 - n0)) -v th="$(threads "$p")" '
				function ms(v) {
					if (v ~ /us$/) return v / 1000
					if (v ~ /ms$/) return v + 0
					if (v ~ /m$/) return v * 60000
					return v * 1000 # s
				}
				/requests in/ {n = $1} /Non-2xx|Socket errors/ {e = 1}
				/Requests\/sec/ {rps = $2} $1 == "50%" {p50 = ms($2)} $1 == "99%" {p99 = ms($2)}
				END {printf "%s %s %.2f %d %.0f %.3f %.3f %.1f %.1f %d\n", c, s, dt * 1e6 / hz / n, e, rps, p50, p99,
					vcs * 1000 / n, ncs * 1000 / n, th}' >>"$WORK/runs"
		done
	done
	stop_hogs
done

printf '%-6s %-28s %8s %8s %9s %7s %8s %8s %4s  %s\n' cond server "p50 ms" "p99 ms" "req/s" CPU-µs "vcs/1k" "ivcs/1k" thr "p99 of each run"
for c in $CONDS; do
	for s in "${SERVERS[@]}"; do
		awk -v c="$c" -v s="$s" '$1 == c && $2 == s' "$WORK/runs" | awk -v c="$c" -v s="$s" '
			function median(a, n,   i, j, t) {
				for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) {t = a[j]; a[j] = a[j-1]; a[j-1] = t}
				return a[int((n + 1) / 2)]
			}
			{cpu[NR] = $3; e += $4; r[NR] = $5; p[NR] = $6; q[NR] = $7; all = all " " $7; v[NR] = $8; iv[NR] = $9; th = $10}
			END {name = s; sub(/.*\//, "", name)
				printf "%-6s %-28s %8.3f %8.3f %9.0f %7.2f %8.1f %8.1f %4d  %s%s\n", c, name, median(p, NR), median(q, NR),
					median(r, NR), median(cpu, NR), median(v, NR), median(iv, NR), th, all, e ? "  ERRORS" : ""}'
	done
done
