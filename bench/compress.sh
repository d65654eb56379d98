#!/usr/bin/env bash
# compress.sh - on-the-fly compression benchmark: Sluice's compress filter
# against nginx `gzip on`, on the same 80 KB HTML page.
#
# Usage: bench/compress.sh [--duration 10s] [--rounds 3] [--level 1]
#                          [--servers "nginx sluice"] [--out FILE]
#
# Method (as bench/engine.sh): wrk pinned to core 0 with taskset, each
# server to core 1. The page is components/testdata/compress/article.html
# (82,036 bytes of news-article markup). Each server compresses it with
# gzip at --level (default 1, the level of nginx's `gzip on`) for every
# request:
#
#   nginx:  static file, `gzip on; gzip_comp_level LEVEL; gzip_types
#           text/html; gzip_vary on`, one worker, open_file_cache, no log.
#   sluice: bench/peers/sluicecompress: pipe.Chain{source serving the page
#           from memory, compress{encodings: [gzip], levels: {gzip: LEVEL}}}
#           on engine.Server.
#   sluice-files: the same with the files component as the source (the
#           route [files, compress]).
#
# Before measuring, a request checks that the response is gzip-encoded and
# decodes to the page. Measured: wrk -t1 -c100 (keep-alive) with
# "Accept-Encoding: gzip" for --duration after a 2 s warm-up; requests/s
# from wrk; server CPU-µs per request = delta utime+stime of the server
# process(es) from /proc/PID/stat / requests completed. Rounds interleave
# the servers; the median is reported (Markdown on stdout and in --out).
#
# Needs: wrk nginx taskset curl gzip cmp pgrep ss awk timeout, a Go toolchain.

set -euo pipefail
# Run as root (as benchmarks here often are), sluice refuses to serve
# without a user to switch to unless told so.
export SLUICE_ALLOW_ROOT=1

DURATION="10s"
ROUNDS=3
LEVEL=1
SERVERS="nginx sluice"
OUT=""
CONNS=100
WARMUP="2s"

usage() { sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

while [[ $# -gt 0 ]]; do
	case "$1" in
	--duration) DURATION="$2"; shift 2 ;;
	--rounds) ROUNDS="$2"; shift 2 ;;
	--level) LEVEL="$2"; shift 2 ;;
	--servers) SERVERS="$2"; shift 2 ;;
	--out) OUT="$2"; shift 2 ;;
	-h|--help) usage 0 ;;
	*) echo "compress.sh: unknown argument: $1" >&2; usage 2 ;;
	esac
done

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$BENCH_DIR/.." && pwd)
PAGE_SRC="$REPO_DIR/components/testdata/compress/article.html"
CLK_TCK=$(getconf CLK_TCK)
HOST=127.0.0.1

log() { echo "compress.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

for tool in wrk taskset go curl gzip cmp pgrep ss awk timeout; do
	command -v "$tool" >/dev/null || die "missing tool: $tool"
done
[[ $(nproc) -ge 2 ]] || die "need at least 2 CPUs (client on core 0, server on core 1)"
[[ -f "$PAGE_SRC" ]] || die "missing $PAGE_SRC"

WORK=$(mktemp -d /tmp/sluice-compress.XXXXXX)
chmod 755 "$WORK"
ROOT="$WORK/root"
mkdir -p "$ROOT"
cp "$PAGE_SRC" "$ROOT/article.html"
chmod 644 "$ROOT/article.html"
PAGE="$ROOT/article.html"
SERVER_PID=""

cleanup() {
	local rc=$?
	stop_server
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "building sluicecompress"
(cd "$BENCH_DIR" && go build -o "$WORK/sluicecompress" ./peers/sluicecompress) || die "build failed"

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

# nginx_conf PORT: the nginx config, tuned as bench/conf/nginx.conf.in plus gzip.
nginx_conf() {
	cat <<-CONF
	daemon off;
	master_process on;
	worker_processes 1;
	pid $WORK/run/nginx.pid;
	error_log $WORK/run/nginx-error.log warn;
	events { worker_connections 4096; use epoll; multi_accept on; }
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
	    gzip on;
	    gzip_comp_level $LEVEL;
	    gzip_types text/html;
	    gzip_vary on;
	    client_body_temp_path $WORK/run/client_body;
	    proxy_temp_path $WORK/run/proxy;
	    fastcgi_temp_path $WORK/run/fastcgi;
	    uwsgi_temp_path $WORK/run/uwsgi;
	    scgi_temp_path $WORK/run/scgi;
	    server { listen $HOST:$1 backlog=4096; root $ROOT; }
	}
	CONF
}

# start_server NAME PORT: start NAME on core 1 and wait until it answers.
start_server() {
	local name=$1 port=$2 cmd
	rm -rf "$WORK/run"
	mkdir -p "$WORK/run"
	case "$name" in
	nginx)
		nginx_conf "$port" >"$WORK/run/nginx.conf"
		cmd=(nginx -p "$WORK/run" -c "$WORK/run/nginx.conf" -e "$WORK/run/nginx-error.log") ;;
	sluice)
		cmd=("$WORK/sluicecompress" -listen "$HOST:$port" -file "$PAGE" -encoding gzip -level "$LEVEL") ;;
	sluice-files) # the route [files, compress]: the page read by the files component
		cmd=("$WORK/sluicecompress" -listen "$HOST:$port" -file "$PAGE" -encoding gzip -level "$LEVEL" -files) ;;
	*) die "unknown server $name" ;;
	esac
	taskset -c 1 "${cmd[@]}" >"$WORK/run/stdout.log" 2>&1 &
	SERVER_PID=$!
	local i
	for i in $(seq 100); do
		if (exec 3<>"/dev/tcp/$HOST/$port") 2>/dev/null; then
			[[ $name != nginx ]] || [[ -n $(pgrep -P "$SERVER_PID") ]] && return 0
		fi
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$WORK/run/"*.log >&2 || true
	die "$name did not come up on port $port"
}

stop_server() {
	[[ -n "$SERVER_PID" ]] || return 0
	kill -TERM "$SERVER_PID" 2>/dev/null || true
	local i
	for i in $(seq 50); do
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$SERVER_PID" 2>/dev/null || true
	wait "$SERVER_PID" 2>/dev/null || true
	SERVER_PID=""
}

cpu_pids() { echo "$SERVER_PID" $(pgrep -P "$SERVER_PID" || true); }

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

# check NAME PORT: the response is gzip and decodes to the page; prints
# the compressed size.
check() {
	local name=$1 port=$2 hdr="$WORK/hdr-$name" body="$WORK/body-$name.gz"
	curl -sS -D "$hdr" -o "$body" -H 'Accept-Encoding: gzip' "http://$HOST:$port/article.html" || die "$name: curl failed"
	grep -qi '^content-encoding: gzip' "$hdr" || { cat "$hdr" >&2; die "$name: response is not gzip-encoded"; }
	gzip -dc <"$body" | cmp -s - "$PAGE" || die "$name: the gzip body does not decode to the page"
	wc -c <"$body"
}

run_wrk() {
	local port=$1 dur=$2 secs=${2%s}
	timeout $((secs + 30)) taskset -c 0 \
		wrk -t1 -c"$CONNS" -d"$dur" -H 'Accept-Encoding: gzip' "http://$HOST:$port/article.html"
}

# bench_one NAME: one round for NAME; appends "round name rps cpu_us err bytes".
bench_one() {
	local name=$1 port size pids t0 t1 out
	port=$(free_port)
	log "round $ROUND: $name on :$port"
	start_server "$name" "$port"
	size=$(check "$name" "$port")
	run_wrk "$port" "$WARMUP" >/dev/null || true
	pids=$(cpu_pids)
	t0=$(cpu_ticks $pids)
	out=$(run_wrk "$port" "$DURATION") || die "$name: wrk failed"
	t1=$(cpu_ticks $pids)
	stop_server
	echo "$out" >"$WORK/wrk-$name-r$ROUND.txt"
	echo "$out" | awk -v dt=$((t1 - t0)) -v hz="$CLK_TCK" -v r="$ROUND" -v n="$name" -v sz="$size" '
		/requests in/     { reqs = $1 }
		/^Requests\/sec:/ { rps = $2 }
		/Non-2xx or 3xx/  { err += $NF }
		/Socket errors:/  { gsub(/,/, ""); err += $4 + $6 + $8 + $10 }
		END { printf "%s %s %.0f %.2f %d %d\n", r, n, rps, (reqs > 0 ? dt * 1e6 / hz / reqs : 0), err, sz }' |
		tee -a "$WORK/results.txt" >&2
}

median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
col() { awk -v n="$1" -v f="$2" '$2 == n {print $f}' "$WORK/results.txt"; }

report() {
	local name
	echo "## Sluice compress benchmark"
	echo
	echo "GET /article.html (82,036-byte HTML) with Accept-Encoding: gzip, compressed per request at gzip level $LEVEL;"
	echo "wrk -t1 -c$CONNS keep-alive pinned to core 0, server to core 1; $DURATION per run; median of $ROUNDS interleaved round(s)."
	echo "CPU-µs/req = server utime+stime (/proc/PID/stat) / requests completed."
	echo
	echo "| server | req/s | CPU-µs/req | gzip bytes | errors |"
	echo "|---|---:|---:|---:|---:|"
	for name in $SERVERS; do
		printf '| %s | %.0f | %.1f | %s | %s |\n' "$name" "$(col "$name" 3 | median)" "$(col "$name" 4 | median)" \
			"$(col "$name" 6 | head -1)" "$(col "$name" 5 | awk '{s += $1} END {print s}')"
	done
	echo
	echo "- nproc: $(nproc); CPU: $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo); kernel: $(uname -sr)"
	echo "- $(nginx -v 2>&1); $(wrk -v 2>&1 | head -1); $(go version)"
	echo
	echo "| round | server | req/s | CPU-µs/req | errors | gzip bytes |"
	echo "|---|---|---:|---:|---:|---:|"
	awk '{printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6}' "$WORK/results.txt"
}

: >"$WORK/results.txt"
for ROUND in $(seq "$ROUNDS"); do
	for s in $SERVERS; do
		bench_one "$s"
	done
done
if [[ -n "$OUT" ]]; then report | tee "$OUT"; else report; fi
