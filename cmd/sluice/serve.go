package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/sluice-server/sluice/admin"
	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/daemon"
	"github.com/sluice-server/sluice/daemon/supervisor"
)

// flagsSource names the config the serve flags stand for, in messages.
const flagsSource = "(command line)"

// serveFlags are the flags of sluice serve.
type serveFlags struct {
	file, root, listen, serverHeader, workers, pidFile string
	tlsCert, tlsKey, user                              string
	browse, compress, printConfig, resume              bool
	demo                                               bool // sluice demo's: checkRoot's fix is the demo's
	grace                                              time.Duration
	set                                                map[string]bool // flags given
}

var serveCommand = command{
	name: "serve",
	synopsis: `sluice serve [--root DIR] [--listen ADDR] [--tls-cert FILE --tls-key FILE] [--browse] [--compress] [--server-header VALUE] [--workers N|auto] [--user NAME] [--print-config] [--shutdown-grace D]
       sluice serve -c FILE [--listen ADDR] [--workers N|auto] [--pid-file FILE] [--shutdown-grace D] [--resume]

Serves the files under DIR, or the routes of the config file FILE (see
docs/config.md), over HTTP/1.1 until SIGINT or SIGTERM, which shut down
gracefully: requests in flight get --shutdown-grace (10s) to finish, then
their connections are cut with a warning, and the exit status is still 0.
With --tls-cert and --tls-key (PEM files) it serves HTTPS instead: HTTP/2,
or HTTP/1.1 for a client that asks for it by ALPN, over TLS 1.2 and 1.3
(docs/security.md). A config file's TLS listeners do the same (unless
http2: false), and a plain one with h2c: true serves HTTP/2 as well. The
flags without -c stand for a config file: --print-config prints it and
exits.

Started as root, it serves as the config's user (--user NAME, or user:
in the file) once its listeners and log files are open, and refuses to
start when none is named; --user root, user: root or SLUICE_ALLOW_ROOT=1
in the environment serve as root on purpose (docs/service.md).

SIGHUP loads the config again: a valid one takes over for new requests
while requests in flight finish on the old one, for up to --shutdown-grace; an invalid one is logged
and the running config keeps serving (see 'sluice help reload'). SIGUSR1
reopens the log files (after logrotate). With -c, --listen, --workers and
--pid-file override the file's listen, workers and pid_file.

With --workers N (or workers: N in the file) a master process starts N
worker processes sharing the listening sockets, checks their health and
replaces those that fail; SIGUSR2 then upgrades the binary without
closing a socket (docs/workers.md; 'sluice help signals').

With an admin section in FILE, the admin API (docs/admin.md) reads and
replaces the running config and changes upstream sets without a reload;
--resume starts from what it last applied, saved in its state file,
rather than from FILE.

Under systemd it serves the sockets passed by socket activation
(LISTEN_FDS) for the addresses the config lists, and reports readiness,
reloads and stopping to $NOTIFY_SOCKET (docs/service.md).`,
	setup: func(fs *flag.FlagSet) func(stdout, stderr io.Writer) int {
		f := &serveFlags{}
		fs.StringVar(&f.file, "c", "", "serve the config `FILE` (YAML or JSON)")
		fs.StringVar(&f.file, "config", "", "same as -c")
		fs.StringVar(&f.root, "root", ".", "the `DIR`ectory to serve (without -c)")
		fs.StringVar(&f.listen, "listen", config.DefaultListen, "the `ADDR`ess to listen on: host:port, :port or unix:/path")
		fs.StringVar(&f.tlsCert, "tls-cert", "", "serve HTTPS with the certificate (chain) in the PEM `FILE` (without -c; with --tls-key)")
		fs.StringVar(&f.tlsKey, "tls-key", "", "the private key of --tls-cert, a PEM `FILE`")
		fs.BoolVar(&f.browse, "browse", false, "list the files of directories without an index file (without -c)")
		fs.BoolVar(&f.compress, "compress", false, "compress responses with zstd, br or gzip as the client accepts (without -c)")
		fs.StringVar(&f.serverHeader, "server-header", config.DefaultServerHeader, "the Server header field `value`; empty sends none (without -c)")
		fs.StringVar(&f.workers, "workers", "0", "worker processes under a master, `N` or auto (one per CPU); 0 serves in this one process")
		fs.StringVar(&f.pidFile, "pid-file", "", "write the process id to `FILE` (for sluice reload)")
		fs.StringVar(&f.user, "user", "", "started as root, serve as the user `NAME` once the listener is open; root stays root (without -c)")
		fs.BoolVar(&f.printConfig, "print-config", false, "print the config file the flags stand for, and exit")
		fs.BoolVar(&f.resume, "resume", false, "with -c and an admin section: start from the config and upstream changes the admin API last applied (its state file), not the config file")
		fs.DurationVar(&f.grace, "shutdown-grace", daemon.DefaultGrace, "how long requests in flight get to finish at shutdown (and on the old config after a reload) before they are cut; must be positive")
		return func(stdout, stderr io.Writer) int {
			f.set = map[string]bool{}
			fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
			return f.run(stdout, stderr)
		}
	},
}

func (f *serveFlags) run(stdout, stderr io.Writer) int {
	if f.grace <= 0 {
		// 0 would cut every request at shutdown yet wait forever on a
		// reload's old config: no value means both.
		fmt.Fprintf(stderr, "sluice serve: --shutdown-grace must be positive, got %v\n", f.grace)
		return exitUsage
	}
	if f.file != "" {
		for _, name := range []string{"root", "browse", "compress", "server-header", "print-config", "tls-cert", "tls-key", "user"} {
			if f.set[name] {
				fmt.Fprintf(stderr, "sluice serve: --%s describes a config; with -c the file does (see sluice fmt and sluice check)\n", name)
				return exitUsage
			}
		}
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		fmt.Fprintln(stderr, "sluice serve: --tls-cert and --tls-key go together: the certificate and its private key")
		return exitUsage
	}
	if f.printConfig {
		data, err := f.configYAML()
		if err != nil {
			fmt.Fprintf(stderr, "sluice serve: %v\n", err)
			return exitError
		}
		stdout.Write(data)
		return exitOK
	}
	log := newLogger(stderr)
	act, err := daemon.SocketActivation()
	if err != nil {
		fmt.Fprintln(stderr, "sluice serve:", err)
		return exitError
	}
	if f.resume && f.file == "" {
		fmt.Fprintln(stderr, "sluice serve: --resume needs -c FILE: the admin API's state is kept for a config file's admin section")
		return exitUsage
	}
	var resumed *admin.State
	// The new master of a binary upgrade carries on what the old one
	// served: the admin API's state, when the config has one.
	if f.resume || (supervisor.Upgrading() && f.file != "") {
		if resumed, err = resumeState(f.file, log, f.resume); err != nil {
			log.Error("cannot resume", "error", err)
			return exitError
		}
	}
	if f.workerCount() != 0 || supervisor.Upgrading() {
		return f.runMaster(stdout, stderr, log, act, resumed)
	}
	d := &daemon.Server{Grace: f.grace, Stdout: stdout, Stderr: stderr, Logger: log, SetSlogDefault: true}
	if act != nil {
		d.Listen = act.Listen
	}
	if f.file != "" {
		d.Name = f.file
		d.Attrs = []any{"config", f.file}
		d.QUICSecretFile, _ = daemon.QUICSecretFile(f.file) // none where no state or cache directory is known
		a := &localAdmin{log: log, resumed: resumed}
		a.wire(d, f, act)
		defer a.close()
	} else {
		d.Name = flagsSource
		d.Attrs = []any{"root", f.root}
		d.Load = func(ctx components.Context) (*config.Config, error) {
			data, err := f.configYAML()
			if err != nil {
				return nil, err
			}
			cfg, err := (&config.Loader{Context: ctx}).Parse(flagsSource, data)
			if err != nil {
				return nil, err
			}
			for _, w := range cfg.Warnings {
				w.Line, w.Col = 0, 0 // a position in no file
			}
			warnUnmatched(cfg, act)
			return cfg, checkRoot(cfg, flagsSource, false, ctx.Logger)
		}
	}
	return runDaemon(d, log, stderr)
}

// runDaemon runs d until SIGINT or SIGTERM, reloading on SIGHUP and
// reopening the logs on SIGUSR1 (daemon.HandleSignals), and returns the
// exit status. d logs what goes wrong but a config that cannot be loaded,
// which runDaemon reports: a file's errors one per line as
// FILE:LINE:COL: message on stderr, then a log record; the flags'
// config's errors as log records (their positions are in no file).
func runDaemon(d *daemon.Server, log *slog.Logger, stderr io.Writer) int {
	ctx, stop := daemon.HandleSignals(context.Background(), d)
	defer stop()
	return exitStatus(d.Run(ctx), d.Name, log, stderr)
}

// workerCount returns the number of worker processes asked for (the
// config's Workers): 0 serves in this process. A file that cannot be read
// counts as 0, for the server to report its errors.
func (f *serveFlags) workerCount() int {
	if f.file == "" {
		w, _ := config.ParseWorkers(f.workers) // a bad count: configYAML reports it
		return w
	}
	quiet := components.Context{Logger: slog.New(slog.DiscardHandler)} // the server logs the warnings
	cfg, err := (&config.Loader{Context: quiet}).Load(f.file)
	if err != nil {
		return 0
	}
	defer cfg.Close()
	if f.override(cfg) != nil {
		return 0
	}
	return cfg.Workers
}

// exitStatus returns the exit status for Run's error, reporting a config
// that cannot be loaded: a file's errors one per line as
// FILE:LINE:COL: message on stderr, then a log record; the flags'
// config's errors as log records (their positions are in no file).
// Other errors were logged.
func exitStatus(err error, name string, log *slog.Logger, stderr io.Writer) int {
	var le *daemon.LoadError
	switch {
	case err == nil:
		return exitOK
	case !errors.As(err, &le):
		return exitError // logged
	}
	var errs config.Errors
	var re *rootError
	switch {
	case errors.As(le.Err, &re):
		log.Error("cannot serve", "config", name, "error", re, daemon.FixAttr(re.fix))
	case !errors.As(le.Err, &errs):
		log.Error("cannot load the config", "config", name, "error", le.Err, daemon.FixAttr(config.FileFix(le.Err)))
	case name == flagsSource:
		for _, e := range errs {
			log.Error("cannot serve", "error", e.Msg)
		}
	default:
		fmt.Fprintln(stderr, errs.Error())
		log.Error("invalid config", "config", name, "errors", len(errs))
	}
	return exitError
}

// prepare readies a config loaded from a file: the command line's
// overrides, then the warnings about sockets passed by socket activation
// that it does not listen on, then the check of a process running as
// root (checkRoot), which logs to log.
func (f *serveFlags) prepare(cfg *config.Config, act *daemon.Activation, log *slog.Logger) error {
	if err := f.override(cfg); err != nil {
		return err
	}
	warnUnmatched(cfg, act)
	return checkRoot(cfg, f.file, f.demo, log)
}

// warnUnmatched adds a warning to cfg for each socket passed by socket
// activation that none of its listen addresses matches.
func warnUnmatched(cfg *config.Config, act *daemon.Activation) {
	for _, s := range act.Unmatched(cfg.Listen) {
		cfg.Warnings = append(cfg.Warnings, &config.Warning{File: cfg.File,
			Msg: "socket activation passed a socket for " + s + ", which listen does not list: nothing accepts on it"})
	}
}

// override applies the command line's --listen, --workers and --pid-file
// to a config loaded from a file (config.Overrides).
func (f *serveFlags) override(cfg *config.Config) error {
	var o config.Overrides
	if f.set["listen"] {
		o.Listen = &f.listen
	}
	if f.set["workers"] {
		o.Workers = &f.workers
	}
	if f.set["pid-file"] {
		o.PidFile = &f.pidFile
	}
	return o.Apply(cfg)
}

// configYAML returns the config file the flags stand for (a
// config.Folder), or an error naming the flag that is not valid.
func (f *serveFlags) configYAML() ([]byte, error) {
	folder := &config.Folder{
		Root: f.root, Listen: f.listen, TLSCert: f.tlsCert, TLSKey: f.tlsKey,
		Browse: f.browse, Compress: f.compress, ServerHeader: f.serverHeader,
		Workers: f.workers, PidFile: f.pidFile, User: f.user,
		Comment: "The config file equivalent to: sluice serve " + f.commandLine(),
	}
	return folder.YAML()
}

// commandLine lists the serve flags given, for the printed config's
// comment.
func (f *serveFlags) commandLine() string {
	var parts []string
	add := func(name, value string) {
		if f.set[name] {
			parts = append(parts, "--"+name+value)
		}
	}
	add("root", " "+f.root)
	add("listen", " "+f.listen)
	add("tls-cert", " "+f.tlsCert)
	add("tls-key", " "+f.tlsKey)
	add("browse", "")
	add("compress", "")
	add("server-header", "="+f.serverHeader)
	add("workers", " "+f.workers)
	add("pid-file", " "+f.pidFile)
	add("user", " "+f.user)
	return strings.Join(parts, " ")
}

// newLogger returns a text logger to w and makes it the default, so
// packages logging through slog reach it too.
func newLogger(w io.Writer) *slog.Logger {
	log := slog.New(slog.NewTextHandler(w, nil))
	slog.SetDefault(log)
	return log
}
