#!/usr/bin/env bash
# builds.sh - compare server CPU per request of several sluice builds (and
# optionally nginx) on one file, in interleaved short runs.
#
# Usage: bench/builds.sh [--close] [--proxy | --php] [--conns 100] [--runs 9] [--secs 2] [--size 4096] BIN... [nginx] [nginx-deferred]
#
# Each BIN is a sluice binary, started as `BIN serve --root DIR`; "nginx"
# adds nginx tuned as in bench/files.sh, "nginx-deferred" the same with
# `listen ... deferred` (TCP_DEFER_ACCEPT, as Sluice's listener has). wrk
# (-t1 -c CONNS --latency) is pinned to core 0 and every server to core 1.
# The builds take turns, one run of --secs each, --runs times, so drifting
# background load hits all alike, each round starting with the next build
# (the first run of a round tends to be the fastest); per build the
# medians of CPU-µs per request (utime+stime from /proc/PID/stat ÷
# requests), requests/s and wrk's p50 and p99 latency are printed, and
# every run's CPU figure; with more than one build, so is each build's
# requests/s over the last one's, round by round (a round is one run of
# each build): the median ratio, the lowest and highest, and the rounds it
# was ahead in.
# --close sends "Connection: close"; --conns 10000 is the C10K case (the
# open-file limit must allow it). Used to measure one engine change at a
# time (docs/files.md, "What closed the gap").
# --proxy measures the reverse proxy instead: one upstream (the first BIN
# serving the file, on core 1 beside the servers measured) and each BIN
# started as `BIN serve -c` a config whose one route is `proxy:` to it;
# the CPU counted is the proxy's own. nginx is then `proxy_pass` with
# keep-alive upstream connections (`keepalive 32`).
# --php measures PHP through FastCGI instead: a php-fpm per server (pm =
# static, 4 children, OPcache on, a Unix socket; a pool of its own, since
# a child waits on a kept-alive connection for its next request and would
# be held by another server's; all on core 0 with wrk, so that core
# 1 is the server's alone, as in the harness's php scenario) and each BIN
# started with a config whose one route is `php:` to it (max_conns 4),
# loaded on hello.php (with --size, on a page of that many bytes that
# PHP prints a line at a time); the CPU counted is the server's own. nginx is then
# `fastcgi_pass` to an upstream with `keepalive 4` and `fastcgi_keep_conn
# on`. KEEP=1 in the environment keeps the work folder (configs, nginx's
# error log).
#
# Needs: wrk taskset nginx (if asked for) awk ss; php-fpm for --php.
set -euo pipefail
# Run as root (as benchmarks here often are), sluice refuses to serve
# without a user to switch to unless told so.
export SLUICE_ALLOW_ROOT=1

CLOSE=""
PROXY=""
PHP=""
CHILDREN=4
CONNS=100
RUNS=9
SECS=2
SIZE=4096
SIZE_SET=""
BINS=()
while [[ $# -gt 0 ]]; do
	case "$1" in
	--close) CLOSE=1; shift ;;
	--proxy) PROXY=1; shift ;;
	--php) PHP=1; shift ;;
	--conns) CONNS="$2"; shift 2 ;;
	--runs) RUNS="$2"; shift 2 ;;
	--secs) SECS="$2"; shift 2 ;;
	--size) SIZE="$2"; SIZE_SET=1; shift 2 ;;
	-h|--help) sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "builds.sh: unknown option $1" >&2; exit 2 ;;
	*) BINS+=("$1"); shift ;;
	esac
done
[[ ${#BINS[@]} -gt 0 ]] || { echo "builds.sh: name at least one build" >&2; exit 2; }
[[ -z $PROXY || -z $PHP ]] || { echo "builds.sh: --proxy or --php, not both" >&2; exit 2; }

WORK=$(mktemp -d /tmp/sluice-builds.XXXXXX)
chmod 755 "$WORK"
mkdir -p "$WORK/root"
head -c "$SIZE" /dev/zero | tr '\0' x >"$WORK/root/f.html"
chmod 644 "$WORK/root/f.html"
declare -A PORT PID
cleanup() {
	for p in "${PID[@]}"; do kill "$p" 2>/dev/null || true; done
	[[ -n ${KEEP:-} ]] || rm -rf "$WORK"
}
trap cleanup EXIT

URLPATH=/f.html
if [[ -n $PHP ]]; then
	FPM=$(command -v php-fpm || ls /usr/sbin/php-fpm[0-9]* 2>/dev/null | sort -V | tail -n1 || true)
	[[ -n $FPM ]] || { echo "builds.sh: --php needs php-fpm (Debian package php-fpm)" >&2; exit 2; }
	printf '<?php\necho "Hello, world\\n";\n' >"$WORK/root/hello.php"
	chmod 644 "$WORK/root/hello.php"
	as_root=()
	[[ $(id -u) -ne 0 ]] || as_root=(--allow-to-run-as-root)
	# start_fpm DIR starts a php-fpm pool of its own in DIR (socket
	# DIR/php-fpm.sock): each server gets one, because a php-fpm child
	# waits on a kept-alive connection for its next request, so servers
	# sharing a pool would hold its children for each other.
	start_fpm() {
		local dir=$1
		mkdir -p "$dir"
		cat >"$dir/php-fpm.conf" <<CONF
[global]
pid = $dir/php-fpm.pid
error_log = $dir/php-fpm.log
daemonize = no
[bench]
listen = $dir/php-fpm.sock
listen.mode = 0666
listen.backlog = 4096
pm = static
pm.max_children = $CHILDREN
pm.max_requests = 0
CONF
		taskset -c 0 "$FPM" --nodaemonize --fpm-config "$dir/php-fpm.conf" -d opcache.enable=1 "${as_root[@]}" >/dev/null 2>&1 &
		PID[php-fpm-$dir]=$!
		for _ in $(seq 100); do [[ -S $dir/php-fpm.sock ]] && break; sleep 0.1; done
		[[ -S $dir/php-fpm.sock ]] || { echo "builds.sh: php-fpm did not start: $(tail -n3 "$dir/php-fpm.log" 2>/dev/null)" >&2; exit 1; }
	}
	URLPATH=/hello.php
	if [[ -n $SIZE_SET ]]; then
		# A page of SIZE bytes that PHP prints a line at a time, as a
		# template does: its output buffer (output_buffering, 4 KiB in
		# Debian's php.ini) goes to php-fpm, and on as a record, each
		# time it fills.
		printf '<?php\nfor ($i = 0; $i < intdiv(%d, 35); $i++) { echo "<p>Lorem ipsum dolor sit amet.</p>\\n"; }\necho str_repeat("x", %d %% 35);\n' "$SIZE" "$SIZE" >"$WORK/root/print.php"
		chmod 644 "$WORK/root/print.php"
		URLPATH=/print.php
	fi
fi

port=$((21000 + RANDOM % 9000))
if [[ -n $PROXY ]]; then
	UPPORT=$port
	taskset -c 1 "${BINS[0]}" serve --root "$WORK/root" --listen "127.0.0.1:$UPPORT" >/dev/null 2>&1 &
	PID[upstream]=$!
fi
nfpm=0
for b in "${BINS[@]}"; do
	port=$((port + 1))
	PORT[$b]=$port
	if [[ -n $PHP ]]; then
		nfpm=$((nfpm + 1))
		FPMDIR=$WORK/fpm$nfpm
		start_fpm "$FPMDIR"
	fi
	if [[ $b == nginx || $b == nginx-deferred ]]; then
		opts=""
		[[ $b == nginx-deferred ]] && opts=" deferred"
		nginx_proxy=""
		[[ -n $PROXY ]] && nginx_proxy='proxy_pass http://up; proxy_http_version 1.1; proxy_set_header Connection "";'
		nginx_php_up="" nginx_php_loc=""
		if [[ -n $PHP ]]; then
			nginx_php_up="upstream php { server unix:$FPMDIR/php-fpm.sock; keepalive $CHILDREN; }"
			nginx_php_loc='location ~ \.php$ { include /etc/nginx/fastcgi_params; fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name; fastcgi_pass php; fastcgi_keep_conn on; }'
		fi
		mkdir -p "$WORK/$b"
		cat >"$WORK/$b/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $WORK/$b/nginx.pid; error_log $WORK/$b/error.log warn;
events { worker_connections 20000; use epoll; multi_accept on; }
http { access_log off; sendfile on; tcp_nopush on; tcp_nodelay on; keepalive_timeout 120s; keepalive_requests 1000000;
  open_file_cache max=1000 inactive=20s; open_file_cache_valid 60s; server_tokens off; types { text/html html; }
  client_body_temp_path $WORK/$b/cb; proxy_temp_path $WORK/$b/p; fastcgi_temp_path $WORK/$b/f; uwsgi_temp_path $WORK/$b/u; scgi_temp_path $WORK/$b/s;
  upstream up { server 127.0.0.1:${UPPORT:-1}; keepalive 32; } $nginx_php_up
  server { listen 127.0.0.1:$port backlog=4096$opts; root $WORK/root;
    location / { $nginx_proxy } $nginx_php_loc } }
CONF
		taskset -c 1 nginx -c "$WORK/$b/nginx.conf" >/dev/null 2>&1 &
	elif [[ -n $PHP ]]; then
		mkdir -p "$WORK/$b"
		printf 'listen: 127.0.0.1:%s\nroutes:\n  - match: /\n    pipeline:\n      - php: {root: "%s", upstreams: ["unix:%s"], max_conns: %s}\n' \
			"$port" "$WORK/root" "$FPMDIR/php-fpm.sock" "$CHILDREN" >"$WORK/$b/sluice.yaml"
		taskset -c 1 "$b" serve -c "$WORK/$b/sluice.yaml" >/dev/null 2>&1 &
	elif [[ -n $PROXY ]]; then
		mkdir -p "$WORK/$b"
		printf 'listen: 127.0.0.1:%s\nroutes:\n  - match: /\n    pipeline:\n      - proxy: http://127.0.0.1:%s\n' "$port" "$UPPORT" >"$WORK/$b/sluice.yaml"
		taskset -c 1 "$b" serve -c "$WORK/$b/sluice.yaml" >/dev/null 2>&1 &
	else
		taskset -c 1 "$b" serve --root "$WORK/root" --listen "127.0.0.1:$port" >/dev/null 2>&1 &
	fi
	PID[$b]=$!
done
sleep 1

ticks() { local s; s=$(cat "/proc/$1/stat"); s=${s##*) }; set -- $s; echo $((${12} + ${13})); }
wrk_args=(-t1 "-c$CONNS" --latency)
[[ -n $CLOSE ]] && wrk_args+=(-H "Connection: close")
CLK=$(getconf CLK_TCK)
for b in "${BINS[@]}"; do taskset -c 0 wrk "${wrk_args[@]}" -d1s "http://127.0.0.1:${PORT[$b]}$URLPATH" >/dev/null; done
: >"$WORK/runs"
nb=${#BINS[@]}
for round in $(seq 0 $((RUNS - 1))); do
	# Each round starts with the next build: the first run of a round
	# was seen to serve a few per cent faster than the rest (the proxy's
	# shared upstream), so no build may always hold that place.
	for k in $(seq 0 $((nb - 1))); do
		b=${BINS[$(((round + k) % nb))]}
		t0=$(ticks "${PID[$b]}")
		out=$(taskset -c 0 wrk "${wrk_args[@]}" -d"${SECS}s" "http://127.0.0.1:${PORT[$b]}$URLPATH")
		t1=$(ticks "${PID[$b]}")
		echo "$out" | awk -v b="$b" -v dt=$((t1 - t0)) -v hz="$CLK" '
			function ms(v) {
				if (v ~ /us$/) return v / 1000
				if (v ~ /ms$/) return v + 0
				if (v ~ /m$/) return v * 60000
				return v * 1000 # s
			}
			/requests in/ {n = $1} /Non-2xx|Socket errors/ {e = 1}
			/Requests\/sec/ {rps = $2} $1 == "50%" {p50 = ms($2)} $1 == "99%" {p99 = ms($2)}
			END {printf "%s %.2f %d %.0f %.3f %.3f\n", b, dt * 1e6 / hz / n, e, rps, p50, p99}' >>"$WORK/runs"
	done
done
for b in "${BINS[@]}"; do
	awk -v b="$b" '$1 == b {print $2, $3, $4, $5, $6}' "$WORK/runs" | sort -g | awk -v b="$b" '
		function median(a, n,   i, j, t) {
			for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) {t = a[j]; a[j] = a[j-1]; a[j-1] = t}
			return a[int((n + 1) / 2)]
		}
		{v[NR] = $1; all = all " " $1; e += $2; r[NR] = $3; p[NR] = $4; q[NR] = $5}
		END {printf "%-30s median %7.2f CPU-µs/request  %8.0f req/s  p50 %8.3f ms  p99 %8.3f ms  (%s )%s\n",
			b, v[int((NR + 1) / 2)], median(r, NR), median(p, NR), median(q, NR), all, e ? "  ERRORS" : ""}'
done
last=${BINS[${#BINS[@]}-1]}
for b in "${BINS[@]}"; do
	[[ $b == "$last" ]] && break
	awk -v b="$b" -v l="$last" '
		function median(a, n,   i, j, t) {
			for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) {t = a[j]; a[j] = a[j-1]; a[j-1] = t}
			return a[int((n + 1) / 2)]
		}
		$1 == b {x[++nb] = $4} $1 == l {y[++nl] = $4}
		END {
			for (i = 1; i <= nb && i <= nl; i++) {q[i] = x[i] / y[i]; ahead += q[i] >= 1; lo = i == 1 || q[i] < lo ? q[i] : lo; hi = q[i] > hi ? q[i] : hi}
			n = i - 1
			printf "%-30s requests/s over %s, round by round: median %.3f (%.3f-%.3f), ahead in %d of %d\n", b, l, median(q, n), lo, hi, ahead, n
		}' "$WORK/runs"
done
