#!/usr/bin/env bash
# engine.sh - the engine benchmark (Sluice against its peers), now a thin
# wrapper over the Go harness, bench/cmd/sluicebench.
#
# Usage: bench/engine.sh [--sluice PATH] [--duration 10s] [--out DIR]
#                        [--rounds 3] [--servers "nginx lighttpd nethttp fasthttp sluice"]
#                        [--idle-conns 10000] [any other sluicebench flag]
#
# Runs the engine scenarios only: the 151-byte page with keep-alive at
# 1-1,000 connections, the wrk cross-check, pipelined x16, and idle memory
# per connection. Relative paths (--sluice, --out) are taken from bench/,
# where the harness runs; without --out the report goes to a scratch
# directory (--out ../docs/benchmarks/engine updates the committed one). For everything, run `make bench`, or
# `go -C bench run ./cmd/sluicebench` from the repository root; --help
# there lists the flags.
set -euo pipefail
# Run as root (as benchmarks here often are), sluice refuses to serve
# without a user to switch to unless told so.
export SLUICE_ALLOW_ROOT=1

cd "$(dirname "${BASH_SOURCE[0]}")/.."
args=(--scenarios warp,wrk,pipelined,idle)
while [[ $# -gt 0 ]]; do
	case "$1" in
	--servers) args+=(--servers "$(echo "$2" | tr -s ' ' ',' | sed 's/^,//; s/,$//')"); shift 2 ;;
	--idle-conns) args+=(--conns "$2"); shift 2 ;;
	-h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) args+=("$1"); shift ;;
	esac
done
exec go -C bench run ./cmd/sluicebench "${args[@]}"
