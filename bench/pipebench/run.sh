#!/usr/bin/env bash
# run.sh - end-to-end Chain vs ProcNetwork over loopback (docs/pipe.md).
#
# Usage: bench/pipebench/run.sh [DURATION] [ROUNDS] [CONNS]
#        (defaults 10s, 3, 50)
#
# Builds pipebench, runs it pinned to core 1 and wrk (-t1) pinned to core
# 0, and alternates /chain and /network for ROUNDS rounds. For each run it
# prints requests/s (wrk) and the server's CPU time per request in µs:
# delta utime+stime of the server from /proc/PID/stat over the requests
# wrk completed. Needs wrk and taskset (util-linux).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
DURATION=${1:-10s}
ROUNDS=${2:-3}
CONNS=${3:-50}
CLK_TCK=$(getconf CLK_TCK)

tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/pipebench" .
taskset -c 1 "$tmp/pipebench" -listen 127.0.0.1:0 2>"$tmp/log" &
pid=$!
for _ in $(seq 100); do
	grep -q 'serving on' "$tmp/log" 2>/dev/null && break
	sleep 0.1
done
base=$(sed -n 's/.*serving on \(http:[^ ]*\)\//\1/p' "$tmp/log")
[[ -n "$base" ]] || { echo "run.sh: server did not start" >&2; cat "$tmp/log" >&2; exit 1; }

cputicks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
taskset -c 0 wrk -t1 -c"$CONNS" -d2s "$base/chain" >/dev/null   # warm-up
taskset -c 0 wrk -t1 -c"$CONNS" -d2s "$base/network" >/dev/null

printf '%-8s %-6s %12s %14s\n' round route 'requests/s' 'CPU-µs/req'
for round in $(seq "$ROUNDS"); do
	for route in chain network; do
		t0=$(cputicks)
		out=$(taskset -c 0 wrk -t1 -c"$CONNS" -d"$DURATION" "$base/$route")
		t1=$(cputicks)
		reqs=$(echo "$out" | awk '/requests in/ {print $1}')
		rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
		us=$(awk -v d=$((t1 - t0)) -v hz="$CLK_TCK" -v n="$reqs" 'BEGIN {printf "%.2f", d * 1e6 / hz / n}')
		printf '%-8s %-6s %12s %14s\n' "$round" "$route" "$rps" "$us"
	done
done
