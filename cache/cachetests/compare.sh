#!/usr/bin/env bash
# compare.sh - the HTTP cache test suite (testdata/cache-tests) against
# Sluice's cache, nginx's proxy_cache and Varnish, in one run, and their
# figures in a table: tests passed (required and optimal) and required
# tests failed, counted with the suite's own determineTestResult as
# cache-tests.fyi counts them (testdata/count.mjs).
#
# Usage: cache/cachetests/compare.sh [--servers "sluice nginx varnish"]
#                                     [--results DIR]
#
# One origin (testdata/origin.mjs) serves the three caches; each listens
# on a free loopback port, with its files in a temporary directory
# removed at the end (the system's services are never used), and the
# suite runs through them one after the other (about a minute each):
#
#   sluice:  this checkout's `sluice serve`, the route [cache, {proxy:
#            ORIGIN}]. Without a cache component, the row says so.
#   sluice-proxy: the route [{proxy: ORIGIN}], no cache: what a proxy
#            that stores nothing scores (not run unless named).
#   nginx:   the suite's docker/nginx/nginx.conf: proxy_cache_path
#            levels=1:2 keys_zone=my-cache:8m max_size=1000m
#            inactive=600m; proxy_cache my-cache; proxy_cache_revalidate
#            on; proxy_http_version 1.1 (one worker, no access log).
#   varnish: Debian's /etc/varnish/default.vcl with the backend's port
#            made the origin's (the suite's docker/setup.sh), varnishd
#            -p default_ttl=0 -p default_grace=0 -p default_keep=3600
#            -s malloc,64M (the suite's docker/serve.sh; -j none, since
#            the jail changes only whom it runs as).
#
# --results DIR keeps each server's results (NAME.json, the suite's
# JSON) and counts (NAME.counts.json: count.mjs's, with the ids of the
# required tests failed). The table is Markdown on stdout.
#
# Needs: node and testdata's npm modules (npm ci in testdata), curl, a
# Go toolchain; nginx and varnishd for their rows.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
testdata=$here/testdata

servers="sluice nginx varnish"
results=""
while (($#)); do
	case $1 in
	--servers) servers=$2; shift 2 ;;
	--results) results=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "compare.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
	esac
done
[[ -d $testdata/node_modules/undici ]] || { echo "compare.sh: run npm ci in $testdata first" >&2; exit 1; }
[[ -z $results ]] || mkdir -p "$results"

tmp=$(mktemp -d)
# nginx started as root runs its worker as nobody, which must reach
# its cache and temporary directories here.
chmod 755 "$tmp"
pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

# freeport prints a loopback TCP port free when asked.
freeport() {
	node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close() })'
}

# waitport PORT NAME waits until something answers HTTP on PORT.
waitport() {
	for _ in $(seq 100); do
		curl -s -o /dev/null "http://127.0.0.1:$1/" && return 0
		sleep 0.1
	done
	echo "compare.sh: $2 does not answer on 127.0.0.1:$1" >&2
	return 1
}

# The origin: its port is the one it prints.
node "$testdata/origin.mjs" >"$tmp/origin.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
	origin=$(sed -n 's|^listening http://127.0.0.1:\([0-9]*\)/$|\1|p' "$tmp/origin.out")
	[[ -n $origin ]] && break
	sleep 0.1
done
[[ -n $origin ]] || { echo "compare.sh: the origin did not start:" >&2; cat "$tmp/origin.out" >&2; exit 1; }

# pkgversion PKG prints " (Debian VERSION)" when dpkg knows PKG.
pkgversion() {
	local v
	v=$(dpkg-query -W -f '${Version}' "$1" 2>/dev/null) && echo " (Debian $v)" || true
}

# start_NAME PORT starts NAME on PORT and sets version (to "" when
# Sluice has no cache component) and log (a file of its errors).
start_sluice() {
	sluice_route "$1" "[cache, {proxy: http://127.0.0.1:$origin}]"
}
start_sluice-proxy() {
	sluice_route "$1" "[{proxy: http://127.0.0.1:$origin}]"
}
sluice_route() { # PORT PIPELINE
	[[ -x $tmp/sluice ]] || (cd "$root" && go build -o "$tmp/sluice" ./cmd/sluice) >&2
	cat >"$tmp/sluice.yaml" <<-EOF
		listen: 127.0.0.1:$1
		routes:
		  - match: /
		    pipeline: $2
	EOF
	if ! "$tmp/sluice" check -c "$tmp/sluice.yaml" >"$tmp/sluice.check" 2>&1; then
		echo "compare.sh: sluice check refuses the config (no cache component?):" >&2
		cat "$tmp/sluice.check" >&2
		version=""
		return 0
	fi
	log=$tmp/sluice-$1.log
	SLUICE_ALLOW_ROOT=1 "$tmp/sluice" serve -c "$tmp/sluice.yaml" >"$log" 2>&1 &
	pids+=($!)
	waitport "$1" sluice
	version="$(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD || echo +changes)"
}

start_nginx() {
	local d=$tmp/nginx
	mkdir -p "$d/cache" "$d/tmp" "$d/logs"
	cat >"$d/nginx.conf" <<-EOF
		daemon off;
		worker_processes 1;
		error_log $d/logs/error.log;
		pid $d/nginx.pid;
		events { worker_connections 2048; }
		http {
		    access_log off;
		    client_body_temp_path $d/tmp/body;
		    fastcgi_temp_path $d/tmp/fastcgi;
		    uwsgi_temp_path $d/tmp/uwsgi;
		    scgi_temp_path $d/tmp/scgi;
		    # The suite's docker/nginx/nginx.conf, with its paths and ports:
		    proxy_cache_path  $d/cache levels=1:2 keys_zone=my-cache:8m max_size=1000m inactive=600m;
		    proxy_temp_path $d/tmp/proxy;
		    server {
		        listen       127.0.0.1:$1;
		        location / {
		            proxy_pass http://127.0.0.1:$origin;
		            proxy_cache my-cache;
		            proxy_cache_revalidate on;
		            proxy_http_version 1.1;
		        }
		    }
		}
	EOF
	log=$d/logs/error.log
	nginx -c "$d/nginx.conf" -p "$d" >"$d/logs/stderr" 2>&1 &
	pids+=($!)
	waitport "$1" nginx
	version=$(nginx -v 2>&1 | sed 's|^nginx version: nginx/||')$(pkgversion nginx)
}

start_varnish() {
	local d=$tmp/varnish
	mkdir -p "$d"
	sed "s/\"8080\"/\"$origin\"/" /etc/varnish/default.vcl >"$d/default.vcl"
	varnishd -F -j none -n "$d/work" -a "127.0.0.1:$1" -f "$d/default.vcl" \
		-p default_ttl=0 -p default_grace=0 -p default_keep=3600 -s malloc,64M >"$d/log" 2>&1 &
	log=$d/log
	pids+=($!)
	waitport "$1" varnish
	version=$(varnishd -V 2>&1 | sed -n 's/^varnishd (varnish-\([^ ]*\) .*/\1/p')$(pkgversion varnish)
}

rows=()
for s in $servers; do
	case $s in sluice | sluice-proxy | nginx | varnish) ;; *) echo "compare.sh: unknown server $s" >&2; exit 2 ;; esac
	port=$(freeport)
	"start_$s" "$port"
	if [[ -z $version ]]; then
		rows+=("| $s | no cache component | - | - |")
		continue
	fi
	echo "compare.sh: running the suite through $s $version on 127.0.0.1:$port" >&2
	node "$testdata/run.mjs" "http://127.0.0.1:$port" >"$tmp/$s.json"
	node "$testdata/count.mjs" "$tmp/$s.json" >"$tmp/$s.counts.json"
	read -r passed failed < <(node -e 'const c = JSON.parse(require("fs").readFileSync(process.argv[1])); console.log(c.passed, c.required_failed)' "$tmp/$s.counts.json")
	if ((passed == 0)); then
		echo "compare.sh: $s passed no test, a broken setup: the end of $log:" >&2
		tail -n 20 "$log" >&2 || true
	fi
	rows+=("| $s | $version | $passed | $failed |")
	[[ -z $results ]] || cp "$tmp/$s.json" "$tmp/$s.counts.json" "$results/"
done

echo "| server | version | tests passed (required and optimal) | required tests failed |"
echo "|---|---|--:|--:|"
printf '%s\n' "${rows[@]}"
