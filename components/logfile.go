package components

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"gopkg.in/natefinch/lumberjack.v2"
)

// LogRotation configures the rotation of a log file by size (the
// options max_size, max_age, max_backups and compress of the log
// component and access_log): when a line would take the file past
// MaxSize, the file is renamed with the time in its name
// (access-2026-12-06T13-04-05.000.log, in UTC) and a new one started;
// then the old files beyond MaxBackups, or older than MaxAge, are
// removed, and the others compressed if Compress is set. The renaming,
// naming, pruning and compression are package lumberjack's
// (gopkg.in/natefinch/lumberjack.v2). The zero value rotates nothing.
type LogRotation struct {
	// MaxSize is the size past which the file is rotated, in bytes or
	// with a unit (100MiB); 0 never rotates it. At least 1KiB.
	MaxSize int64 `yaml:"max_size"`

	// MaxAge removes rotated files older than it (by the time in their
	// names), counted in whole days: at least 24h. 0 keeps them.
	MaxAge time.Duration `yaml:"max_age"`

	// MaxBackups is how many rotated files are kept, the newest; 0 keeps
	// them all (but for MaxAge).
	MaxBackups int `yaml:"max_backups"`

	// Compress gzips the rotated files (name.log.gz).
	Compress bool `yaml:"compress"`
}

// check validates r, for a log writing file ("" for a stream).
func (r LogRotation) check(file string) error {
	switch {
	case r == LogRotation{}:
		return nil
	case r.MaxSize == 0:
		return errors.New("log: max_age, max_backups and compress apply to the files max_size rotates: set max_size too (max_size: 100MiB)")
	case file == "":
		return errors.New("log: max_size rotates a file, and this log writes to a stream: give a file, or rotate the stream where it goes")
	case r.MaxSize < 1<<10:
		return fmt.Errorf("log: max_size %d is below 1KiB: a rotation per few lines is surely a mistake; write max_size: 100MiB", r.MaxSize)
	case r.MaxAge < 0 || r.MaxAge > 0 && r.MaxAge < 24*time.Hour:
		return fmt.Errorf("log: max_age %v: rotated files are kept whole days; write 24h or more (720h for 30 days), or 0 to keep them", r.MaxAge)
	case r.MaxBackups < 0:
		return fmt.Errorf("log: max_backups must not be negative, not %d", r.MaxBackups)
	}
	return nil
}

// days is MaxAge in whole days, rounded up, as lumberjack counts.
func (r LogRotation) days() int {
	return int((r.MaxAge + 24*time.Hour - 1) / (24 * time.Hour))
}

// logFile is a log file as this process writes it: one descriptor,
// opened for appending, shared by every Log of the process that names
// the path (a route's and the server-wide, the old config's and the new
// during a reload), so that rotating it here moves every writer at once.
// Its methods are safe for concurrent use.
type logFile struct {
	path string // absolute: the registry's key

	mu      sync.Mutex
	out     *os.File
	size    int64          // of out, as this process knows it
	uses    []*LogRotation // of the Logs that have it open, in the order they opened it
	rot     LogRotation
	rotator *lumberjack.Logger // nil: no rotation in this process
	last    time.Time          // of the last rotation
}

var logFiles = struct {
	sync.Mutex
	m map[string]*logFile
}{m: map[string]*logFile{}}

// openSharedLog returns the process's logFile for path, opening it if no
// Log has it open, and the use to give back to release. The file is
// rotated as the last Log opened with a rotation says (if rotate: a
// reload's new options replace the old), until that Log releases it.
func openSharedLog(path string, rot LogRotation, rotate bool) (*logFile, *LogRotation, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, err
	}
	logFiles.Lock()
	defer logFiles.Unlock()
	f := logFiles.m[abs]
	if f == nil {
		out, err := openLogFile(abs)
		if err != nil {
			return nil, nil, err
		}
		f = &logFile{path: abs, out: out}
		if fi, err := out.Stat(); err == nil {
			f.size = fi.Size()
		}
		logFiles.m[abs] = f
	}
	if !rotate {
		rot = LogRotation{}
	}
	use := &rot
	f.mu.Lock()
	f.uses = append(f.uses, use)
	f.setRotation()
	f.mu.Unlock()
	return f, use, nil
}

// setRotation makes the rotation of the last use with one the file's.
func (f *logFile) setRotation() {
	var rot LogRotation
	for _, u := range f.uses {
		if u.MaxSize > 0 {
			rot = *u
		}
	}
	if rot.MaxSize == 0 {
		f.rot, f.rotator = LogRotation{}, nil
		return
	}
	if f.rotator != nil && f.rot == rot {
		return
	}
	// A new Logger for new options: the old one's mill goroutine may
	// still read its fields.
	f.rot, f.rotator = rot, newRotator(f.path, rot)
}

// newRotator returns the lumberjack.Logger that rotates path. It never
// writes the file (the Logs do): only its Rotate is called, which
// renames the file, creates the new one with the old one's mode and
// owner, and prunes and compresses the old files in a goroutine.
func newRotator(path string, rot LogRotation) *lumberjack.Logger {
	return &lumberjack.Logger{
		Filename:   path,
		MaxSize:    1 << 30, // MiB: Rotate is called, Write never
		MaxAge:     rot.days(),
		MaxBackups: rot.MaxBackups,
		Compress:   rot.Compress,
	}
}

// release gives back a use openSharedLog returned, closing the file with
// the last.
func (f *logFile) release(use *LogRotation) {
	logFiles.Lock()
	defer logFiles.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if i := slices.Index(f.uses, use); i >= 0 {
		f.uses = slices.Delete(f.uses, i, i+1)
	}
	if len(f.uses) > 0 {
		f.setRotation()
		return
	}
	delete(logFiles.m, f.path)
	f.out.Close()
}

// Write appends batch, whole lines. With rotation, the lines that would
// take the file past MaxSize go to a new file: the file is rotated
// before them (a line longer than MaxSize gets a file to itself).
func (f *logFile) Write(batch []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	written := 0
	for f.rotator != nil && f.size+int64(len(batch)) > f.rot.MaxSize {
		room := max(f.rot.MaxSize-f.size, 0)
		cut := bytes.LastIndexByte(batch[:min(room, int64(len(batch)))], '\n') + 1
		if cut == 0 && f.size == 0 { // one line longer than MaxSize
			cut = bytes.IndexByte(batch, '\n') + 1
			if cut == 0 {
				cut = len(batch)
			}
		}
		if cut > 0 {
			n, err := f.out.Write(batch[:cut])
			f.size += int64(n)
			written += n
			if err != nil {
				return written, err
			}
			batch = batch[cut:]
			if len(batch) == 0 {
				return written, nil
			}
		}
		if err := f.rotate(); err != nil {
			return written, err
		}
	}
	n, err := f.out.Write(batch)
	f.size += int64(n)
	return written + n, err
}

// rotate moves the file aside and opens the new one.
func (f *logFile) rotate() error {
	// Backups are named to the millisecond: two rotations in one would
	// give the second the first's name, and the rename would overwrite
	// it. The last one's name was taken before it returned (f.last).
	if d := time.Until(f.last.Truncate(time.Millisecond).Add(time.Millisecond)); d > 0 {
		time.Sleep(d)
	}
	err := f.rotator.Rotate()
	f.last = time.Now()
	f.rotator.Close() // its descriptor to the new file: the Logs write through f.out
	if err != nil {
		return fmt.Errorf("log: rotating %s: %w", f.path, err)
	}
	return f.reopen()
}

// Reopen opens the path again (after logrotate moved the file, or a
// master rotated it), keeping the old file if the path cannot be opened.
func (f *logFile) Reopen() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reopen()
}

func (f *logFile) reopen() error {
	out, err := openLogFile(f.path)
	if err != nil {
		return err
	}
	f.out.Close()
	f.out, f.size = out, 0
	if fi, err := out.Stat(); err == nil {
		f.size = fi.Size()
	}
	return nil
}

// Chown gives the file to uid and gid.
func (f *logFile) Chown(uid, gid int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.out.Chown(uid, gid)
}

// LogRotator rotates a log file that other processes write and do not
// rotate themselves — the workers of a master (package
// daemon/supervisor), whose Logs are built with their Context's Workers
// set: one process only may rename a file, or each would rename the
// others' new one. The master calls Check now and then, and when it
// returns true, has the writers reopen the file by its name. A
// LogRotator is not safe for concurrent use.
type LogRotator struct {
	path    string
	rot     LogRotation
	rotator *lumberjack.Logger // Compress off and no pruning: the rename
	miller  *lumberjack.Logger // the configured pruning and compression
	milled  bool               // the last rotation's old files are pruned
}

// NewLogRotator returns the LogRotator of the file path, rotated as rot
// says.
func NewLogRotator(path string, rot LogRotation) *LogRotator {
	return &LogRotator{
		path:    path,
		rot:     rot,
		rotator: &lumberjack.Logger{Filename: path, MaxSize: 1 << 30},
		miller:  newRotator(path, rot),
		milled:  true,
	}
}

// Rotation returns the rotation r was made with.
func (r *LogRotator) Rotation() LogRotation { return r.rot }

// Check rotates the file if it has reached MaxSize, and reports whether
// it did: the writers must then reopen it. The old files are pruned and
// compressed at the next Check, once the writers have moved to the new
// file, so that none is compressed while a line is still being added to
// it.
func (r *LogRotator) Check() (bool, error) {
	if !r.milled {
		// Opening the file (without writing) runs the Logger's pruning
		// and compression of the old files, in its goroutine.
		_, err := r.miller.Write(nil)
		r.miller.Close()
		r.milled = true
		if err != nil {
			return false, fmt.Errorf("log: pruning the old files of %s: %w", r.path, err)
		}
	}
	fi, err := os.Stat(r.path)
	if err != nil || fi.Size() < r.rot.MaxSize {
		return false, nil // a file not there yet is no error: a writer creates it
	}
	err = r.rotator.Rotate()
	r.rotator.Close()
	if err != nil {
		return false, fmt.Errorf("log: rotating %s: %w", r.path, err)
	}
	r.milled = false
	return true, nil
}
