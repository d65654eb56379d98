#!/usr/bin/env bash
# engine.sh - HTTP/1.1 engine benchmark: Sluice against its peers.
#
# Usage: bench/engine.sh [--sluice PATH] [--duration 10s] [--out FILE]
#                        [--rounds 3] [--servers "nginx lighttpd nethttp fasthttp sluice"]
#                        [--idle-conns 10000]
#
# Method (one machine, two cores): the load generator (wrk, idleconns) is
# pinned to core 0 with taskset, every server to core 1, so a server has
# exactly one core and the client never competes with it. For each server,
# in interleaved rounds (server A, B, C, ... then again), we measure:
#
#   a. keep-alive: wrk -t1 -c100 GET / (a 151-byte index.html).
#   b. pipelined:  the same with pipeline.lua sending 16 requests per write.
#      For a and b: requests/s from wrk, and server CPU-µs per request =
#      delta (utime+stime) of the server process(es) from /proc/PID/stat,
#      converted from clock ticks to µs, divided by requests completed.
#   c. idle memory: a fresh server is warmed with a few requests, its VmRSS
#      read, then bench/idleconns opens 10,000 keep-alive connections, makes
#      one GET on each and holds them idle; after ~2 s VmRSS is read again.
#      Reported: RSS delta / connections, and how many got a 200.
#
# The median over rounds is reported as a Markdown table on stdout (and in
# --out FILE), followed by the per-round raw figures. Progress goes to stderr.
#
# Needs (Debian packages): wrk nginx lighttpd util-linux (taskset) procps
# (pgrep) iproute2 (ss) coreutils (timeout) gawk|mawk; plus a Go toolchain at
# least as new as go.mod asks (Debian's golang-go is too old; use go.dev/dl).
# The fasthttp peer downloads its module through the Go proxy on first build.

set -euo pipefail

# ---------------------------------------------------------------- options --

SLUICE=""
DURATION="10s"
OUT=""
ROUNDS=3
SERVERS="nginx lighttpd nethttp fasthttp sluice"
IDLE_N=10000
CONNS=100      # wrk connections for scenarios a and b
PIPELINE=16    # pipeline depth for scenario b
WARMUP="2s"    # wrk warm-up before the measured runs

usage() { sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

while [[ $# -gt 0 ]]; do
	case "$1" in
	--sluice) SLUICE="$2"; shift 2 ;;
	--duration) DURATION="$2"; shift 2 ;;
	--out) OUT="$2"; shift 2 ;;
	--rounds) ROUNDS="$2"; shift 2 ;;
	--servers) SERVERS="$2"; shift 2 ;;
	--idle-conns) IDLE_N="$2"; shift 2 ;;
	-h|--help) usage 0 ;;
	*) echo "engine.sh: unknown argument: $1" >&2; usage 2 ;;
	esac
done

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$BENCH_DIR/.." && pwd)
CLK_TCK=$(getconf CLK_TCK)
HOST=127.0.0.1

log() { echo "engine.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

for tool in wrk taskset go pgrep ss awk timeout; do
	command -v "$tool" >/dev/null || die "missing tool: $tool"
done
[[ $(nproc) -ge 2 ]] || die "need at least 2 CPUs (client on core 0, server on core 1)"
if [[ -n "$SLUICE" ]]; then
	[[ -x "$SLUICE" ]] || die "--sluice $SLUICE is not executable"
	SLUICE=$(cd "$(dirname "$SLUICE")" && pwd)/$(basename "$SLUICE")
fi

# File descriptors: 10k idle connections need >10k fds in both the server and
# the client. Ask for 65536; fall back to the hard limit (containers may cap
# it without CAP_SYS_RESOURCE).
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
NOFILE=$(ulimit -n)
[[ $NOFILE -gt 40000 ]] && NOFILE=40000
[[ $NOFILE -gt $((IDLE_N + 100)) ]] || log "warning: RLIMIT_NOFILE $NOFILE is tight for $IDLE_N connections"

# --------------------------------------------------------------- scratch --

WORK=$(mktemp -d /tmp/sluice-bench.XXXXXX)
chmod 755 "$WORK" # nginx workers may run as an unprivileged user
ROOT="$WORK/root"
BIN="$WORK/bin"
mkdir -p "$ROOT" "$BIN"

SERVER_PID=""  # pid of the running server (nginx: master)
CLIENT_PID=""  # pid of a running idleconns client

cleanup() {
	local rc=$?
	[[ -n "$CLIENT_PID" ]] && kill "$CLIENT_PID" 2>/dev/null || true
	stop_server
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The document: index.html of exactly 151 bytes.
make_docroot() {
	local body='<!DOCTYPE html>
<html><head><title>Sluice bench</title></head>
<body><p>Hello from the Sluice engine benchmark.</p></body>
</html>
'
	local pad=$((151 - ${#body} - 8)) # 8 = len("<!--" + "-->\n")
	local fill
	fill=$(printf '%*s' "$pad" '' | tr ' ' 'x')
	printf '%s<!--%s-->\n' "$body" "$fill" >"$ROOT/index.html"
	chmod 644 "$ROOT/index.html"
	[[ $(wc -c <"$ROOT/index.html") -eq 151 ]] || die "index.html is not 151 bytes"
}

# Build the Go peers and the idle-connection client.
build() {
	log "building idleconns and Go peers in $BIN"
	(cd "$REPO_DIR" && go build -o "$BIN/idleconns" ./bench/idleconns) || die "building idleconns failed"
	(cd "$REPO_DIR" && go build -o "$BIN/nethttp-peer" ./bench/peers/nethttp) || log "warning: nethttp peer did not build"
	(cd "$BENCH_DIR/peers/fasthttp" && go build -o "$BIN/fasthttp-peer" .) || log "warning: fasthttp peer did not build"
}

# available NAME: is server NAME runnable here?
available() {
	case "$1" in
	nginx) command -v nginx >/dev/null ;;
	lighttpd) command -v lighttpd >/dev/null ;;
	nethttp) [[ -x "$BIN/nethttp-peer" ]] ;;
	fasthttp) [[ -x "$BIN/fasthttp-peer" ]] ;;
	sluice) [[ -n "$SLUICE" ]] ;;
	*) return 1 ;;
	esac
}

# free_port: a TCP port nobody listens on, below the ephemeral range so it
# cannot collide with client-side ports.
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

# fill_template IN OUT PORT: substitute config-template placeholders.
fill_template() {
	sed -e "s|@TMP@|$WORK/run|g" -e "s|@ROOT@|$ROOT|g" \
		-e "s|@ADDR@|$HOST:$3|g" -e "s|@HOST@|$HOST|g" -e "s|@PORT@|$3|g" \
		-e "s|@NOFILE@|$NOFILE|g" -e "s|@MAXCONNS@|$((NOFILE / 2))|g" \
		"$1" >"$2"
}

# start_server NAME PORT: start NAME on core 1, wait until it answers.
start_server() {
	local name=$1 port=$2
	rm -rf "$WORK/run"
	mkdir -p "$WORK/run"
	local cmd
	case "$name" in
	nginx)
		fill_template "$BENCH_DIR/conf/nginx.conf.in" "$WORK/run/nginx.conf" "$port"
		cmd=(nginx -p "$WORK/run" -c "$WORK/run/nginx.conf" -e "$WORK/run/nginx-error.log") ;;
	lighttpd)
		fill_template "$BENCH_DIR/conf/lighttpd.conf.in" "$WORK/run/lighttpd.conf" "$port"
		cmd=(lighttpd -D -f "$WORK/run/lighttpd.conf") ;;
	nethttp) cmd=("$BIN/nethttp-peer" -listen "$HOST:$port" -root "$ROOT") ;;
	fasthttp) cmd=("$BIN/fasthttp-peer" -listen "$HOST:$port" -root "$ROOT") ;;
	sluice) cmd=("$SLUICE" serve --root "$ROOT" --listen "$HOST:$port") ;;
	esac
	# taskset execs the server, so $! is the server's own pid.
	taskset -c 1 "${cmd[@]}" >"$WORK/run/stdout.log" 2>&1 &
	SERVER_PID=$!
	local i
	for i in $(seq 100); do
		if (exec 3<>"/dev/tcp/$HOST/$port") 2>/dev/null; then
			# nginx forks its worker after binding; wait for it too.
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

# cpu_pids: the server process and its children (nginx master + worker).
cpu_pids() { echo "$SERVER_PID" $(pgrep -P "$SERVER_PID" || true); }

# rss_pids: the processes whose memory holds connections: nginx's worker(s),
# otherwise the server process and any children.
rss_pids() {
	if [[ $1 == nginx ]]; then pgrep -P "$SERVER_PID"; else cpu_pids; fi
}

# cpu_ticks PID...: utime+stime (all threads) in clock ticks, summed.
cpu_ticks() {
	local pid total=0 stat rest
	for pid in "$@"; do
		stat=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
		rest=${stat##*) } # skip "pid (comm) "; comm may hold spaces
		set -- $rest      # rest starts at field 3 (state)
		total=$((total + ${12} + ${13})) # fields 14 (utime), 15 (stime)
	done
	echo "$total"
}

# rss_bytes PID...: VmRSS summed, in bytes.
rss_bytes() {
	local pid total=0 kb
	for pid in "$@"; do
		kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null) || continue
		total=$((total + ${kb:-0}))
	done
	echo $((total * 1024))
}

# run_wrk PORT DURATION [wrk options...] [-- script args...]: run wrk on
# core 0, bounded by timeout; output to stdout.
run_wrk() {
	local port=$1 dur=$2
	shift 2
	local opts=() secs=${dur%s}
	while [[ $# -gt 0 && $1 != -- ]]; do opts+=("$1"); shift; done
	timeout $((secs + 30)) taskset -c 0 \
		wrk -t1 -c"$CONNS" -d"$dur" "${opts[@]}" "http://$HOST:$port/" "$@"
}

# measure NAME PORT LABEL [wrk args...]: one measured wrk run. Prints
# "reqs_per_s cpu_us_per_req errors".
measure() {
	local name=$1 port=$2 label=$3
	shift 3
	local pids t0 t1 out
	pids=$(cpu_pids)
	t0=$(cpu_ticks $pids)
	out=$(run_wrk "$port" "$DURATION" "$@") || { log "$name $label: wrk failed"; echo "0 0 -1"; return; }
	t1=$(cpu_ticks $pids)
	echo "$out" >"$WORK/wrk-$name-$label-r$ROUND.txt"
	echo "$out" | awk -v dt=$((t1 - t0)) -v hz="$CLK_TCK" '
		/requests in/            { n = $1 }
		/^Requests\/sec:/        { rps = $2 }
		/Non-2xx or 3xx/         { err += $NF }
		/Socket errors:/         { gsub(/,/, ""); err += $4 + $6 + $8 + $10 }
		END {
			cpu = (n > 0) ? dt * 1e6 / hz / n : 0
			printf "%.0f %.2f %d\n", rps, cpu, err
		}'
}

# idle_test NAME: fresh server; RSS before and with IDLE_N idle connections.
# Sets IDLE_RESULT to "rss_bytes_per_conn ok_count". (Not run in a $(...)
# subshell, so the EXIT trap sees SERVER_PID and CLIENT_PID.)
idle_test() {
	local name=$1 port before after ok
	port=$(free_port)
	start_server "$name" "$port"
	# A few requests so lazily allocated state exists before the baseline.
	taskset -c 0 "$BIN/idleconns" -addr "$HOST:$port" -n 20 -hold 0s >/dev/null
	sleep 1
	before=$(rss_bytes $(rss_pids "$name"))
	local cout="$WORK/idle-$name-r$ROUND.txt"
	taskset -c 0 "$BIN/idleconns" -addr "$HOST:$port" -n "$IDLE_N" -hold 120s >"$cout" 2>&1 &
	CLIENT_PID=$!
	local i
	for i in $(seq 600); do
		grep -q READY "$cout" && break
		kill -0 "$CLIENT_PID" 2>/dev/null || break
		sleep 0.1
	done
	sleep 2 # let the connections sit idle
	after=$(rss_bytes $(rss_pids "$name"))
	kill -USR1 "$CLIENT_PID" 2>/dev/null || true
	wait "$CLIENT_PID" 2>/dev/null || true
	CLIENT_PID=""
	stop_server
	ok=$(sed -n 's/^ok=\([0-9]*\).*/\1/p' "$cout")
	[[ -n "$ok" ]] || { log "$name idle: client output:"; cat "$cout" >&2; ok=0; }
	IDLE_RESULT="$(( (after - before) / IDLE_N )) $ok"
}

# bench_one NAME: scenarios a, b, c for one server; appends to results.
bench_one() {
	local name=$1 port ka pl idle
	port=$(free_port)
	log "round $ROUND: $name on :$port"
	start_server "$name" "$port"
	run_wrk "$port" "$WARMUP" >/dev/null || true
	ka=$(measure "$name" "$port" ka)
	pl=$(measure "$name" "$port" pl -s "$BENCH_DIR/pipeline.lua" -- "$PIPELINE")
	stop_server
	idle_test "$name"
	# round name ka_rps ka_cpu ka_err pl_rps pl_cpu pl_err rss_per_conn idle_ok
	echo "$ROUND $name $ka $pl $IDLE_RESULT" | tee -a "$WORK/results.txt" >&2
}

# ------------------------------------------------------------------ report --

median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# col NAME FIELD: the values of FIELD (1-based in results.txt) for NAME.
col() { awk -v n="$1" -v f="$2" '$2 == n {print $f}' "$WORK/results.txt"; }

report() {
	local name
	echo "## Sluice engine benchmark"
	echo
	echo "GET / (151-byte index.html) over 127.0.0.1; wrk pinned to core 0, server to core 1;"
	echo "$CONNS connections, 1 wrk thread, $DURATION per run; median of $ROUNDS interleaved round(s)."
	echo "CPU-µs/req = server utime+stime (/proc/PID/stat) / requests completed."
	echo "Idle RSS = (VmRSS with $IDLE_N idle keep-alive conns - VmRSS before) / $IDLE_N."
	echo
	echo "| server | keep-alive req/s | keep-alive CPU-µs/req | pipelined×$PIPELINE req/s | pipelined CPU-µs/req | idle RSS bytes/conn at $IDLE_N | errors |"
	echo "|---|---:|---:|---:|---:|---:|---|"
	for name in $RUN_SERVERS; do
		local kar kac plr plc rss kerr perr okmin
		kar=$(col "$name" 3 | median); kac=$(col "$name" 4 | median)
		plr=$(col "$name" 6 | median); plc=$(col "$name" 7 | median)
		rss=$(col "$name" 9 | median)
		kerr=$(col "$name" 5 | awk '{s += $1} END {print s}')
		perr=$(col "$name" 8 | awk '{s += $1} END {print s}')
		okmin=$(col "$name" 10 | sort -g | head -1)
		printf '| %s | %.0f | %.2f | %.0f | %.2f | %.0f | ka %s, pl %s; idle 200s %s/%s |\n' \
			"$name" "$kar" "$kac" "$plr" "$plc" "$rss" "$kerr" "$perr" "$okmin" "$IDLE_N"
	done
	echo
	echo "errors: non-2xx + socket errors summed over all rounds (ka = keep-alive, pl = pipelined);"
	echo "idle 200s = fewest connections that got a 200 in any round."
	echo
	echo "### Machine"
	echo
	echo "- nproc: $(nproc); CPU: $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
	echo "- kernel: $(uname -sr)"
	echo "- RLIMIT_NOFILE: $NOFILE"
	echo "- $(command -v nginx >/dev/null && nginx -v 2>&1 || echo 'nginx: not installed')"
	echo "- $(command -v lighttpd >/dev/null && lighttpd -v 2>&1 | head -1 || echo 'lighttpd: not installed')"
	echo "- $(wrk -v 2>&1 | head -1)"
	echo "- $(go version)"
	echo "- fasthttp: $(awk '/valyala\/fasthttp v/ {print $NF; exit}' "$BENCH_DIR/peers/fasthttp/go.mod")"
	[[ -z "$SLUICE" ]] || echo "- sluice: $SLUICE"
	echo
	echo "### Per round"
	echo
	echo "| round | server | ka req/s | ka CPU-µs | ka err | pl req/s | pl CPU-µs | pl err | idle B/conn | idle 200s |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	awk '{printf "| %s |\n", $1 " | " $2 " | " $3 " | " $4 " | " $5 " | " $6 " | " $7 " | " $8 " | " $9 " | " $10}' "$WORK/results.txt"
}

# -------------------------------------------------------------------- main --

make_docroot
build
RUN_SERVERS=""
for s in $SERVERS; do
	if available "$s"; then RUN_SERVERS="$RUN_SERVERS $s"; else log "skipping $s (not available)"; fi
done
[[ -n "$RUN_SERVERS" ]] || die "no server to benchmark"
: >"$WORK/results.txt"

for ROUND in $(seq "$ROUNDS"); do
	for s in $RUN_SERVERS; do
		bench_one "$s"
	done
done

if [[ -n "$OUT" ]]; then
	report | tee "$OUT"
else
	report
fi
