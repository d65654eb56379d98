#!/usr/bin/env bash
# files.sh - static file benchmark: Sluice's files server against nginx.
#
# Usage: bench/files.sh [--sluice PATH] [--duration 10s] [--rounds 5]
#                       [--scenarios "ka151 ka4k ka80k ka1m close4k"] [--out FILE]
#                       [--nginx-deferred]
#
# Method (one machine, two cores), as bench/engine.sh: wrk is pinned to
# core 0 with taskset, each server to core 1. Both servers run for the whole
# benchmark; only the one being measured gets load. For every round, every
# scenario is run against nginx and then Sluice (interleaved, so drifting
# background load hits both alike). For each run:
#
#   requests/s and p50/p99 latency from wrk --latency, and server CPU-µs
#   per request = delta (utime+stime) of the server process(es) from
#   /proc/PID/stat, converted from clock ticks to µs, divided by the
#   requests wrk completed.
#
# Scenarios (files of exactly these sizes, served from one docroot):
#   ka151   keep-alive GET of a 151-byte file, 100 connections
#   ka4k    keep-alive GET of a 4 KiB file, 100 connections
#   ka80k   keep-alive GET of an 80 KiB file, 100 connections
#   ka1m    keep-alive GET of a 1 MiB file, 100 connections
#   close4k GET of the 4 KiB file with "Connection: close", 100 connections
#
# nginx is tuned: one worker, sendfile on, tcp_nopush on, open_file_cache,
# access_log off. Sluice runs `sluice serve --root DIR --listen ADDR`.
# Sluice's listener defers accepting a connection until its first bytes
# arrive (TCP_DEFER_ACCEPT); --nginx-deferred gives nginx the same
# (`listen ... deferred`), which its tuned configuration otherwise lacks.
# The median over rounds is printed as a Markdown table (and written to
# --out FILE, with wrk's raw output in FILE.wrk/), then the per-round
# figures.
#
# Needs: wrk nginx taskset (util-linux) pgrep (procps) ss (iproute2)
# timeout awk; a sluice binary (default: built from this checkout into the
# scratch directory with `go build ./cmd/sluice`).

set -euo pipefail

SLUICE=""
DURATION="10s"
ROUNDS=5
SCENARIOS="ka151 ka4k ka80k ka1m close4k"
OUT=""
NGINX_LISTEN_OPTS=""
CONNS=100
WARMUP="2s"
HOST=127.0.0.1

usage() { sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

while [[ $# -gt 0 ]]; do
	case "$1" in
	--sluice) SLUICE="$2"; shift 2 ;;
	--duration) DURATION="$2"; shift 2 ;;
	--rounds) ROUNDS="$2"; shift 2 ;;
	--scenarios) SCENARIOS="$2"; shift 2 ;;
	--out) OUT="$2"; shift 2 ;;
	--nginx-deferred) NGINX_LISTEN_OPTS=" deferred"; shift ;;
	-h|--help) usage 0 ;;
	*) echo "files.sh: unknown argument: $1" >&2; usage 2 ;;
	esac
done

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$BENCH_DIR/.." && pwd)
CLK_TCK=$(getconf CLK_TCK)

log() { echo "files.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

for tool in wrk nginx taskset pgrep ss awk timeout; do
	command -v "$tool" >/dev/null || die "missing tool: $tool"
done
[[ $(nproc) -ge 2 ]] || die "need at least 2 CPUs (client on core 0, servers on core 1)"

ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
NOFILE=$(ulimit -n)

WORK=$(mktemp -d /tmp/sluice-files-bench.XXXXXX)
chmod 755 "$WORK"
ROOT="$WORK/root"
mkdir -p "$ROOT" "$WORK/nginx"
NGINX_PID=""
SLUICE_PID=""

cleanup() {
	local rc=$?
	for pid in $NGINX_PID $SLUICE_PID; do
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ -z "$SLUICE" ]]; then
	log "building sluice"
	(cd "$REPO_DIR" && go build -o "$WORK/sluice" ./cmd/sluice) || die "go build ./cmd/sluice failed"
	SLUICE="$WORK/sluice"
fi
[[ -x "$SLUICE" ]] || die "--sluice $SLUICE is not executable"

# make_file NAME SIZE: an HTML-ish file of exactly SIZE bytes.
make_file() {
	local name=$1 size=$2
	printf '<!DOCTYPE html>\n<html><head><title>Sluice bench</title></head>\n<body>\n' >"$ROOT/$name"
	head -c "$size" /dev/zero | tr '\0' 'x' >>"$ROOT/$name"
	truncate -s "$size" "$ROOT/$name"
	chmod 644 "$ROOT/$name"
}
make_file f151.html 151
make_file f4k.html 4096
make_file f80k.html 81920
make_file f1m.html 1048576

free_port() {
	local p
	for _ in $(seq 200); do
		p=$((20000 + RANDOM % 12000))
		if ! ss -Htln "sport = :$p" | grep -q .; then
			echo "$p"
			return
		fi
	done
	die "no free port found"
}

NGINX_PORT=$(free_port)
cat >"$WORK/nginx/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
worker_rlimit_nofile $NOFILE;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events {
    worker_connections 20000;
    use epoll;
    multi_accept on;
}
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 120s;
    keepalive_requests 1000000;
    open_file_cache max=1000 inactive=20s;
    open_file_cache_valid 60s;
    server_tokens off;
    default_type application/octet-stream;
    types { text/html html; }
    client_body_temp_path $WORK/nginx/client_body;
    proxy_temp_path $WORK/nginx/proxy;
    fastcgi_temp_path $WORK/nginx/fastcgi;
    uwsgi_temp_path $WORK/nginx/uwsgi;
    scgi_temp_path $WORK/nginx/scgi;
    server {
        listen $HOST:$NGINX_PORT backlog=4096$NGINX_LISTEN_OPTS;
        root $ROOT;
        index index.html;
    }
}
EOF

wait_port() {
	local port=$1 pid=$2
	for _ in $(seq 100); do
		if (exec 3<>"/dev/tcp/$HOST/$port") 2>/dev/null; then return 0; fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	die "server pid $pid did not come up on port $port"
}

taskset -c 1 nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log" \
	>"$WORK/nginx/stdout.log" 2>&1 &
NGINX_PID=$!
wait_port "$NGINX_PORT" "$NGINX_PID"
for _ in $(seq 50); do [[ -n $(pgrep -P "$NGINX_PID") ]] && break; sleep 0.1; done

SLUICE_PORT=$(free_port)
SLUICE_ALLOW_ROOT=1 taskset -c 1 "$SLUICE" serve --root "$ROOT" --listen "$HOST:$SLUICE_PORT" >"$WORK/sluice.log" 2>&1 &
SLUICE_PID=$!
wait_port "$SLUICE_PORT" "$SLUICE_PID"

cpu_ticks() {
	local pid total=0 stat rest
	for pid in "$@"; do
		stat=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
		rest=${stat##*) }
		set -- $rest
		total=$((total + ${12} + ${13}))
	done
	echo "$total"
}

# scenario NAME: prints "path extra-wrk-args".
scenario() {
	case "$1" in
	ka151) echo "/f151.html" ;;
	ka4k) echo "/f4k.html" ;;
	ka80k) echo "/f80k.html" ;;
	ka1m) echo "/f1m.html" ;;
	close4k) echo "/f4k.html close" ;;
	*) die "unknown scenario $1" ;;
	esac
}

# measure SERVER SCENARIO DURATION: prints "rps cpu_us_per_req errors".
measure() {
	local server=$1 sc=$2 dur=$3 port pids path mode t0 t1 out secs
	if [[ $server == nginx ]]; then
		port=$NGINX_PORT; pids="$NGINX_PID $(pgrep -P "$NGINX_PID" | tr '\n' ' ')"
	else
		port=$SLUICE_PORT; pids=$SLUICE_PID
	fi
	read -r path mode <<<"$(scenario "$sc")"
	local args=(-t1 -c"$CONNS" -d"$dur" --latency)
	[[ $mode == close ]] && args+=(-H "Connection: close")
	secs=${dur%s}
	t0=$(cpu_ticks $pids)
	out=$(timeout $((secs + 30)) taskset -c 0 wrk "${args[@]}" "http://$HOST:$port$path") ||
		{ log "$server $sc: wrk failed"; echo "0 0 -1 0 0"; return; }
	t1=$(cpu_ticks $pids)
	echo "$out" >>"$WORK/wrk-$server-$sc.txt"
	echo "$out" | wrk_fields $((t1 - t0))
}

# wrk_fields reads wrk --latency output on stdin and prints
# "req/s CPU-µs/req errors p50-ms p99-ms", the server having used $1
# clock ticks.
wrk_fields() {
	awk -v dt="$1" -v hz="$CLK_TCK" '
		function ms(d) {
			if (d ~ /us$/) return substr(d, 1, length(d) - 2) / 1000
			if (d ~ /ms$/) return substr(d, 1, length(d) - 2) + 0
			if (d ~ /m$/)  return substr(d, 1, length(d) - 1) * 60000
			if (d ~ /s$/)  return substr(d, 1, length(d) - 1) * 1000
			return d + 0
		}
		/requests in/     { n = $1 }
		/^Requests\/sec:/ { rps = $2 }
		/Non-2xx or 3xx/  { err += $NF }
		/Socket errors:/  { gsub(/,/, ""); err += $4 + $6 + $8 + $10 }
		$1 == "50%"       { p50 = ms($2) }
		$1 == "99%"       { p99 = ms($2) }
		END { printf "%.0f %.2f %d %.3f %.3f\n", rps, (n > 0) ? dt * 1e6 / hz / n : 0, err, p50, p99 }'
}

: >"$WORK/results.txt"
for ROUND in $(seq "$ROUNDS"); do
	for sc in $SCENARIOS; do
		for server in nginx sluice; do
			measure "$server" "$sc" "$WARMUP" >/dev/null
			r=$(measure "$server" "$sc" "$DURATION")
			echo "$ROUND $sc $server $r" | tee -a "$WORK/results.txt" >&2
		done
	done
done

median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
col() { awk -v s="$1" -v n="$2" -v f="$3" '$2 == s && $3 == n {print $f}' "$WORK/results.txt"; }

report() {
	echo "## Static files: Sluice against nginx"
	echo
	echo "Measured at commit $(git -C "$REPO_DIR" describe --always --dirty 2>/dev/null || echo unknown) (the checkout running this script), $(date -u '+%Y-%m-%d %H:%M UTC')."
	echo
	echo "wrk -t1 -c$CONNS -d$DURATION pinned to core 0; servers pinned to core 1; median of $ROUNDS interleaved rounds."
	[[ -n $NGINX_LISTEN_OPTS ]] && echo "nginx listens with \`deferred\` (TCP_DEFER_ACCEPT), as Sluice does."
	echo "CPU-µs/req = server utime+stime (/proc/PID/stat) / requests completed. Errors summed over rounds."
	echo
	echo "p50 / p99: medians over rounds of wrk's latency percentiles (ms)."
	echo
	echo "| scenario | nginx req/s | nginx p50 / p99 | sluice req/s | sluice p50 / p99 | nginx CPU-µs/req | sluice CPU-µs/req | sluice/nginx CPU | errors nginx/sluice |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---|"
	local sc nr sr nc scpu ne se nl sl
	for sc in $SCENARIOS; do
		nr=$(col "$sc" nginx 4 | median); sr=$(col "$sc" sluice 4 | median)
		nc=$(col "$sc" nginx 5 | median); scpu=$(col "$sc" sluice 5 | median)
		ne=$(col "$sc" nginx 6 | awk '{s += $1} END {print s}')
		se=$(col "$sc" sluice 6 | awk '{s += $1} END {print s}')
		nl="$(printf '%.2f / %.2f' "$(col "$sc" nginx 7 | median)" "$(col "$sc" nginx 8 | median)")"
		sl="$(printf '%.2f / %.2f' "$(col "$sc" sluice 7 | median)" "$(col "$sc" sluice 8 | median)")"
		printf '| %s | %.0f | %s | %.0f | %s | %.2f | %.2f | %.2f | %s / %s |\n' "$sc" "$nr" "$nl" "$sr" "$sl" "$nc" "$scpu" \
			"$(awk -v a="$scpu" -v b="$nc" 'BEGIN {print (b > 0) ? a / b : 0}')" "$ne" "$se"
	done
	echo
	echo "Machine: $(nproc) CPUs, $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo); $(uname -sr);"
	echo "$(nginx -v 2>&1); $(wrk -v 2>&1 | head -1); $(go version 2>/dev/null || true); load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo
	echo "### Per round"
	echo
	echo "| round | scenario | server | req/s | CPU-µs/req | errors | p50 ms | p99 ms |"
	echo "|---|---|---|---:|---:|---:|---:|---:|"
	awk '{printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8}' "$WORK/results.txt"
}

if [[ -n "$OUT" ]]; then
	report | tee "$OUT"
	# Keep wrk's own output (latency, socket errors) beside the report.
	mkdir -p "$OUT.wrk" && cp "$WORK"/wrk-*.txt "$OUT.wrk/"
else
	report
fi
