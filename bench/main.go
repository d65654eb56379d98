package bench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-server/sluice/bench/report"
)

// Exit statuses of Main.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// allScenarios is every scenario, in the order they run.
var allScenarios = []string{
	report.Warp, report.Wrk, report.Pipelined, report.Webpipes, report.AB,
	report.C10K, report.C10KWrk, report.Sizes, report.Idle, report.Workers, report.Pipe,
	report.Mix, report.MixSlowDB, report.Proxy, report.TLS, report.PHP, report.Cache,
}

// defaultScenarios are those run without --scenarios: all but workers,
// the mix scenarios, proxy, tls, php and cache, which have reports of
// their own (docs/benchmarks/workers, docs/benchmarks/mix,
// docs/benchmarks/proxy, docs/benchmarks/tls, docs/benchmarks/php,
// docs/benchmarks/cache).
var defaultScenarios = slices.DeleteFunc(slices.Clone(allScenarios), func(s string) bool {
	return s == report.Workers || s == report.Mix || s == report.MixSlowDB || s == report.Proxy || s == report.TLS || s == report.PHP || s == report.Cache
})

// options is the parsed command line.
type options struct {
	out        string // report directory: --out, or defaultOut()
	outDefault bool   // out is defaultOut(): --out was not given
	servers    []string
	scenarios  []string
	rounds     int
	duration   time.Duration
	sweep      time.Duration
	quick      bool
	sluice     string
	maxConns   int
	clientCPU  string
	serverCPU  string
	workersCPU string
	keep       bool
	from       string
	reproduce  string
	commandStr string
}

const usage = `Usage: sluicebench [flags]

Benchmarks Sluice against the web servers installed here (nginx, Apache
httpd, lighttpd, Caddy, h2o, Go net/http, fasthttp) and writes a Markdown
report with plots. The client runs on one core, each server on another;
servers are measured in interleaved rounds and medians reported.

The report goes to --out DIR, or without it to a scratch directory
(%s), so that a run inside a checkout never overwrites
the committed report in docs/benchmarks/; to update that, pass its
directory (with go -C bench, --out ../docs/benchmarks).

Flags:
`

// Main runs the benchmark harness with the command-line arguments args
// (without the program name) and returns the exit status: 0 on success,
// 1 if the run failed, 2 on a usage error. Progress and log lines go to
// stderr (a progress bar only if it is a terminal); stdout gets the path
// of the report. The report goes to --out, or without it to a scratch
// directory that stderr names: never into a checkout unless asked. A run
// (not --from) pins the calling process to the client CPU.
func Main(args []string, stdout, stderr io.Writer) int {
	o, code := parse(args, stderr)
	if code >= 0 {
		return code
	}
	if o.outDefault {
		fmt.Fprintf(stderr, "sluicebench: writing the report to the scratch directory %s (--out DIR writes it elsewhere: --out ../docs/benchmarks, with go -C bench, updates the committed report)\n", o.out)
	}
	if o.from != "" {
		return rewrite(o, stdout, stderr)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	h, err := newHarness(ctx, o, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "sluicebench:", err)
		return exitError
	}
	defer h.cleanup()
	path, err := h.run()
	if err != nil {
		h.prog.logf("%v", err)
		if ctx.Err() != nil {
			return 130
		}
		return exitError
	}
	fmt.Fprintln(stdout, path)
	return exitOK
}

// rewrite writes the report from an earlier run's results.json to o.out,
// which, like a run's, is the scratch directory unless --out was given:
// rewriting the committed report is asked for with --out.
func rewrite(o options, stdout, stderr io.Writer) int {
	data, err := os.ReadFile(o.from)
	if err == nil {
		var rep report.Report
		if err = json.Unmarshal(data, &rep); err == nil {
			var path string
			if path, err = report.Write(o.out, &rep); err == nil {
				fmt.Fprintln(stdout, path)
				return exitOK
			}
		}
	}
	fmt.Fprintln(stderr, "sluicebench:", err)
	return exitError
}

// parse reads the command line; code is -1 to go on, or the exit status.
func parse(args []string, stderr io.Writer) (o options, code int) {
	fs := flag.NewFlagSet("sluicebench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, usage, defaultOut())
		fs.PrintDefaults()
		fmt.Fprintf(stderr, "\nServers: %s\nScenarios: %s\n", strings.Join(serverNames(), ", "), strings.Join(allScenarios, ", "))
	}
	out := fs.String("out", "", "directory for the report (README.md, PNG plots, results.json); default: the scratch directory "+defaultOut())
	servers := fs.String("servers", strings.Join(defaultServers(), ","), "comma-separated servers to measure (haproxy: in the proxy scenario only; varnish: in the cache scenario only; sluice-again: in the php scenario only, the same Sluice measured again in each round, an A/A control of the run's noise)")
	scenarios := fs.String("scenarios", strings.Join(defaultScenarios, ","), "comma-separated scenarios to run (workers, mix, mix-slowdb, proxy, tls, php and cache are not run unless named)")
	rounds := fs.Int("rounds", 3, "interleaved rounds; the report gives the median")
	duration := fs.Duration("duration", 5*time.Second, "length of a measured run")
	sweep := fs.Duration("sweep", 3*time.Second, "length of each point of a sweep (connections, rates, file sizes)")
	quick := fs.Bool("quick", false, "smoke test: 1 round, 1 s runs, fewer sweep points, 2,000 connections at most")
	sluice := fs.String("sluice", "", "the sluice binary to measure; default: built from ./cmd/sluice in the repository")
	maxConns := fs.Int("conns", 10000, "connections for the C10K mixes and the largest idle-memory point")
	clientCPU := fs.String("client-cpu", "0", "CPU list (taskset) for the client")
	serverCPU := fs.String("server-cpu", "1", "CPU list (taskset) for the servers")
	workersCPU := fs.String("workers-cpu", fmt.Sprintf("0-%d", runtime.NumCPU()-1), "CPU list (taskset) for the servers of the workers scenario (default: every CPU, so that workers can use more than one; the client stays on --client-cpu)")
	keep := fs.Bool("keep", false, "keep the scratch directory (configurations, logs)")
	from := fs.String("from", "", "measure nothing: write the report from the results.json of an earlier run (to --out, or the scratch directory)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, exitOK
		}
		return o, exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sluicebench: unexpected argument %q\n", fs.Arg(0))
		return o, exitUsage
	}
	o = options{
		out: *out, rounds: *rounds, duration: *duration, sweep: *sweep, quick: *quick,
		sluice: *sluice, maxConns: *maxConns, clientCPU: *clientCPU, serverCPU: *serverCPU, workersCPU: *workersCPU, keep: *keep, from: *from,
	}
	for _, c := range []struct{ flag, list string }{{"client-cpu", o.clientCPU}, {"server-cpu", o.serverCPU}, {"workers-cpu", o.workersCPU}} {
		if cpuList(c.list) == nil {
			fmt.Fprintf(stderr, "sluicebench: -%s %q is not a CPU list (like 1, 0,2 or 0-3)\n", c.flag, c.list)
			return o, exitUsage
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.out == "" {
		o.out, o.outDefault = defaultOut(), true
	}
	if o.quick {
		if !set["rounds"] {
			o.rounds = 1
		}
		if !set["duration"] {
			o.duration = time.Second
		}
		if !set["sweep"] {
			o.sweep = time.Second
		}
		if !set["conns"] {
			o.maxConns = 2000
		}
	}
	for _, s := range splitList(*servers) {
		if !slices.Contains(serverNames(), s) {
			fmt.Fprintf(stderr, "sluicebench: unknown server %q (have %s)\n", s, strings.Join(serverNames(), ", "))
			return o, exitUsage
		}
		o.servers = append(o.servers, s)
	}
	for _, s := range splitList(*scenarios) {
		if !slices.Contains(allScenarios, s) {
			fmt.Fprintf(stderr, "sluicebench: unknown scenario %q (have %s)\n", s, strings.Join(allScenarios, ", "))
			return o, exitUsage
		}
		o.scenarios = append(o.scenarios, s)
	}
	if o.rounds < 1 || o.duration <= 0 || o.sweep <= 0 || o.maxConns < 1 {
		fmt.Fprintln(stderr, "sluicebench: --rounds, --duration, --sweep and --conns must be positive")
		return o, exitUsage
	}
	// The reproduce prefix omits what only changes where the report goes.
	var flags []string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "out", "keep", "scenarios", "servers", "sluice", "from":
		default:
			flags = append(flags, "--"+f.Name+"="+f.Value.String())
		}
	})
	o.reproduce = strings.Join(append([]string{"go -C bench run ./cmd/sluicebench"}, flags...), " ")
	shown := slices.Clone(args)
	if rel, ok := inRepo(repoRoot(), o.sluice); ok {
		// Run from the repository root, as the report says, $PWD names
		// it: the report does not carry this checkout's location.
		for i, a := range shown {
			shown[i] = strings.ReplaceAll(a, o.sluice, `"$PWD/`+rel+`"`)
		}
	}
	o.commandStr = strings.Join(append([]string{"sluicebench"}, shown...), " ")
	return o, -1
}

// inRepo returns path relative to the repository root, with forward
// slashes, if root is not "" and path is an absolute path inside it.
func inRepo(root, path string) (string, bool) {
	if root == "" || !filepath.IsAbs(path) {
		return "", false
	}
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// defaultOut is the report directory without --out: sluice-bench in the
// system's temporary directory ($TMPDIR or /tmp), outside any checkout,
// so that only --out writes over a committed report.
func defaultOut() string { return filepath.Join(os.TempDir(), "sluice-bench") }

func splitList(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// repoRoot returns the root of the Sluice repository containing the
// working directory, or "" if there is none.
func repoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(data), "module github.com/sluice-server/sluice\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
