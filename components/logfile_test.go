package components

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// logRequest is a request for emit, its target numbered.
func logRequest(i int) *engine.Request {
	return &engine.Request{
		Method: []byte("GET"), Target: fmt.Appendf(nil, "/page/%05d", i), ProtoMinor: 1,
		Host: []byte("example.com"), RemoteAddr: guardTCP("192.0.2.1"),
	}
}

// logDir returns the files of dir by name, decompressing the .gz ones.
func logDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(e.Name(), ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("%s: %v", e.Name(), err)
			}
			if data, err = io.ReadAll(zr); err != nil {
				t.Fatalf("%s: %v", e.Name(), err)
			}
		}
		out[e.Name()] = string(data)
	}
	return out
}

// A log with max_size rotates its file when a line would take it past the
// size: every file holds at most max_size bytes and at least max_size
// less a line, though the lines come in batches of many, old files are
// named with the time, and no line is lost or split.
func TestLogRotateBySize(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "access.log")
	const maxSize = 4 << 10
	l := logOpen(t, LogOptions{File: file, Format: "common", LogRotation: LogRotation{MaxSize: maxSize}})
	const n = 400 // lines of 80 bytes: 32,000 bytes, 7 full files and a bit
	for i := range n {
		l.emit(logRequest(i), nil, nil, 200, logArrival, 1234, "")
		if i%100 == 99 {
			l.Sync() // batches of up to 100 lines, 8,000 bytes
		}
	}
	l.Sync()
	files := logDir(t, dir)
	var all []string
	var names []string
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names) // access-TIME.log sort by time, before access.log
	for _, name := range names {
		data := files[name]
		if name != "access.log" {
			if !strings.HasPrefix(name, "access-") || !strings.HasSuffix(name, ".log") {
				t.Errorf("rotated file %s: want access-TIME.log", name)
			}
			if len(data) > maxSize || len(data) < maxSize-80 {
				t.Errorf("rotated file %s has %d bytes: want at most %d and at least %d", name, len(data), maxSize, maxSize-80)
			}
		}
		all = append(all, strings.Split(strings.TrimSuffix(data, "\n"), "\n")...)
	}
	if len(names) < 8 {
		t.Errorf("%d files, want 8 or more: %v", len(names), names)
	}
	if len(all) != n {
		t.Fatalf("%d lines in all, want %d", len(all), n)
	}
	for i, line := range all {
		if want := fmt.Sprintf("GET /page/%05d ", i); !strings.Contains(line, want) {
			t.Fatalf("line %d is %q, want %q in it", i, line, want)
		}
	}
}

// max_backups keeps the newest rotated files, max_age removes those older
// than it, and compress gzips them.
func TestLogRotatePrune(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "access.log")
	// A rotated file two days old, as lumberjack names them: max_age
	// removes it.
	old := filepath.Join(dir, "access-"+time.Now().UTC().Add(-49*time.Hour).Format("2006-01-02T15-04-05.000")+".log")
	if err := os.WriteFile(old, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := logOpen(t, LogOptions{File: file, Format: "common",
		LogRotation: LogRotation{MaxSize: 1 << 10, MaxBackups: 2, MaxAge: 24 * time.Hour, Compress: true}})
	for i := range 100 { // 8,000 bytes: 7 rotations
		l.emit(logRequest(i), nil, nil, 200, logArrival, 1234, "")
		l.Sync()
	}
	// Pruning and compression happen in lumberjack's goroutine.
	var names []string
	sluicetest.WaitFor(t, "two compressed rotated files and access.log", func() bool {
		ents, _ := os.ReadDir(dir)
		names = names[:0]
		for _, e := range ents {
			names = append(names, e.Name())
		}
		gz := 0
		for _, name := range names {
			if strings.HasSuffix(name, ".log.gz") {
				gz++
			}
		}
		return len(names) == 3 && gz == 2 && slices.Contains(names, "access.log")
	})
	files := logDir(t, dir)
	if strings.Contains(strings.Join(slices.Collect(mapValues(files)), ""), "old\n") {
		t.Errorf("the file older than max_age is kept: %v", names)
	}
	var last []string
	for _, name := range names {
		last = append(last, strings.Split(strings.TrimSuffix(files[name], "\n"), "\n")...)
	}
	if !strings.Contains(last[len(last)-1], "GET /page/00099 ") {
		t.Errorf("the newest line is not in access.log: %q", last[len(last)-1])
	}
}

func mapValues(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

// Rotation and logrotate's way (rename, then Reopen or SIGUSR1) work
// together, and two logs of one file (a route's and the server-wide)
// rotate it as one: no line goes to a file the other renamed.
func TestLogRotateWithReopen(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "access.log")
	rot := LogRotation{MaxSize: 2 << 10}
	server := logOpen(t, LogOptions{File: file, Format: "common", ServerWide: true, LogRotation: rot})
	route := logOpen(t, LogOptions{File: file, Format: "common", LogRotation: rot})
	if server.file != route.file {
		t.Fatal("the two logs of one file do not share it")
	}
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{server, route, guardText("x")})).URL
	// A request's lines are queued when its response has ended, which
	// may be after the client has read it: wait for all of them.
	lines := func() int {
		n := 0
		for _, data := range logDir(t, dir) {
			n += strings.Count(data, "\n")
		}
		return n
	}
	get := func(from, to int) {
		for i := from; i < to; i++ {
			sluicetest.Get(t, fmt.Sprintf("%s/page/%05d", url, i))
		}
		sluicetest.WaitFor(t, "every request's two lines", func() bool {
			server.Sync()
			route.Sync()
			return lines() == 2*to
		})
	}
	get(0, 10)
	if err := os.Rename(file, file+".1"); err != nil {
		t.Fatal(err)
	}
	if err := route.Reopen(); err != nil { // one reopen moves both: they share the file
		t.Fatal(err)
	}
	get(10, 60) // 100 lines of about 60 bytes: rotated twice or so
	files := logDir(t, dir)
	if got := strings.Count(files["access.log.1"], "\n"); got != 20 {
		t.Errorf("the file logrotate moved has %d lines, want 20 (10 requests, 2 logs)", got)
	}
	total := 0
	for name, data := range files {
		if name == "access.log.1" {
			continue
		}
		total += strings.Count(data, "\n")
		if len(data) > int(rot.MaxSize) {
			t.Errorf("%s has %d bytes, past max_size", name, len(data))
		}
	}
	if t.Failed() {
		for name, data := range files {
			var pages []string
			for _, line := range strings.Split(strings.TrimSpace(data), "\n") {
				_, after, _ := strings.Cut(line, "/page/")
				pages = append(pages, after[:5])
			}
			t.Logf("%s: %d bytes: %v", name, len(data), pages)
		}
	}
	if total != 100 || len(files) < 3 {
		t.Errorf("%d lines in %d files after the reopen, want 100 in 3 or more: %v", total, len(files), slices.Collect(mapKeys(files)))
	}
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// In a master's worker, a log does not rotate its file (the other
// workers write it too): the master's LogRotator does, when the file
// has reached max_size, and the writers reopen it; the rotated file is
// compressed at the next check, once they have.
func TestLogRotator(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "access.log")
	rot := LogRotation{MaxSize: 1 << 10, Compress: true}
	l := logOpen(t, LogOptions{File: file, Format: "common", LogRotation: rot, rotatedElsewhere: true})
	if f, r, ok := l.Rotation(); !ok || f != file || r != rot {
		t.Fatalf("Rotation() = %q, %+v, %v", f, r, ok)
	}
	for i := range 30 { // 2,400 bytes: past max_size, not rotated by the log
		l.emit(logRequest(i), nil, nil, 200, logArrival, 1234, "")
	}
	l.Sync()
	if files := logDir(t, dir); len(files) != 1 || strings.Count(files["access.log"], "\n") != 30 {
		t.Fatalf("a worker's log rotated its file: %v", slices.Collect(mapKeys(files)))
	}
	r := NewLogRotator(file, rot)
	if rotated, err := r.Check(); !rotated || err != nil {
		t.Fatalf("Check() = %v, %v; want a rotation", rotated, err)
	}
	l.emit(logRequest(30), nil, nil, 200, logArrival, 1234, "") // before the reopen: to the rotated file
	if err := l.Reopen(); err != nil {
		t.Fatal(err)
	}
	l.emit(logRequest(31), nil, nil, 200, logArrival, 1234, "")
	l.Sync()
	if rotated, err := r.Check(); rotated || err != nil {
		t.Fatalf("second Check() = %v, %v; want no rotation", rotated, err)
	}
	sluicetest.WaitFor(t, "the rotated file compressed", func() bool {
		ents, _ := os.ReadDir(dir)
		return len(ents) == 2 && slices.ContainsFunc(ents, func(e os.DirEntry) bool { return strings.HasSuffix(e.Name(), ".log.gz") })
	})
	files := logDir(t, dir)
	for name, data := range files {
		want := 31
		if name == "access.log" {
			want = 1
		}
		if got := strings.Count(data, "\n"); got != want {
			t.Errorf("%s: %d lines, want %d", name, got, want)
		}
	}
}

// Rotation options that cannot work are refused, saying what to write.
func TestLogRotationErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a.log")
	for _, tt := range []struct {
		opts LogOptions
		want string
	}{
		{LogOptions{File: file, LogRotation: LogRotation{MaxBackups: 3}}, "set max_size too"},
		{LogOptions{File: "stdout", LogRotation: LogRotation{MaxSize: 1 << 20}}, "writes to a stream"},
		{LogOptions{File: file, LogRotation: LogRotation{MaxSize: 100}}, "below 1KiB"},
		{LogOptions{File: file, LogRotation: LogRotation{MaxSize: 1 << 20, MaxAge: time.Hour}}, "whole days"},
		{LogOptions{File: file, LogRotation: LogRotation{MaxSize: 1 << 20, MaxBackups: -1}}, "negative"},
	} {
		if _, err := newLog(tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want %q", tt.opts.LogRotation, err, tt.want)
		}
	}
}

// Logs of one file share its rotation: the last opened with one sets it,
// a log without one opened later leaves it, and it ends when the last
// log with one closes (a reload that drops max_size).
func TestLogRotationShared(t *testing.T) {
	file := filepath.Join(t.TempDir(), "access.log")
	open := func(rot LogRotation) *Log {
		l, err := newLog(LogOptions{File: file, LogRotation: rot})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	rotation := func(l *Log) LogRotation {
		l.file.mu.Lock()
		defer l.file.mu.Unlock()
		if l.file.rotator == nil {
			return LogRotation{}
		}
		return l.file.rot
	}
	small, big := LogRotation{MaxSize: 1 << 10}, LogRotation{MaxSize: 1 << 20}
	a := open(small)
	b := open(LogRotation{})
	if got := rotation(b); got != small {
		t.Errorf("a log without rotation opened after one with: %+v, want %+v", got, small)
	}
	c := open(big)
	if got := rotation(a); got != big {
		t.Errorf("after a new log with another rotation: %+v, want %+v", got, big)
	}
	c.Close()
	if got := rotation(a); got != small {
		t.Errorf("once it closed: %+v, want %+v", got, small)
	}
	a.Close()
	if got := rotation(b); got != (LogRotation{}) {
		t.Errorf("once every log with a rotation closed: %+v, want none", got)
	}
	b.Close()
	logFiles.Lock()
	defer logFiles.Unlock()
	if logFiles.m[file] != nil {
		t.Errorf("the file is still open once every log closed")
	}
}
