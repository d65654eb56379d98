package disk

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestWriteRead(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Options{})
	if _, err := s.Get("k"); err != ErrNotFound {
		t.Fatalf("Get on an empty store = %v, want ErrNotFound", err)
	}
	tests := []struct {
		key, head string
		size      int
	}{
		{"GET https://example.com/", "HTTP/1.1 200\r\nContent-Type: text/html\r\n", 5000},
		{"GET https://example.com/empty", "", 0},
		{"GET https://example.com/big", string(bytes.Repeat([]byte("h"), 3000)), 300 << 10},
		{"", "no key", 1},
	}
	for _, tt := range tests {
		put(t, s, tt.key, tt.head, pattern(tt.key, 0, tt.size))
	}
	for _, tt := range tests {
		head, body, ok := get(t, s, tt.key)
		if !ok || head != tt.head || !bytes.Equal(body, pattern(tt.key, 0, tt.size)) {
			t.Errorf("Get(%q) = %q, %d bytes, %v; want %q, %d bytes", tt.key, head, len(body), ok, tt.head, tt.size)
		}
	}
	// A new object replaces the old one.
	put(t, s, tests[0].key, "second", []byte("two"))
	if head, body, _ := get(t, s, tests[0].key); head != "second" || string(body) != "two" {
		t.Errorf("after a replacement Get = %q, %q", head, body)
	}
	n, sum := objectFiles(t, dir)
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if n != len(tests) || st.Objects != n || st.Bytes != sum {
		t.Errorf("%d files of %d bytes; Stats = %+v", n, sum, st)
	}
	if names := temps(t, dir); len(names) != 0 {
		t.Errorf("temporary files left: %q", names)
	}
}

func TestAbort(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Options{})
	put(t, s, "k", "old", []byte("old body"))
	w, err := s.Create("k", []byte("new"))
	if err != nil {
		t.Fatal(err)
	}
	o, err := w.Object()
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	w.Write([]byte("partial"))
	w.Abort()
	if _, _, _, err := o.Next(7); err != ErrAborted {
		t.Errorf("Next after Abort = %v, want ErrAborted", err)
	}
	if err := w.Commit(); err == nil {
		t.Error("Commit after Abort succeeded")
	}
	if head, body, _ := get(t, s, "k"); head != "old" || string(body) != "old body" {
		t.Errorf("after an Abort Get = %q, %q; want the old object", head, body)
	}
	if names := temps(t, dir); len(names) != 0 {
		t.Errorf("temporary files left: %q", names)
	}
}

// Readers of an object being written get each piece as soon as it is
// written, before the next one, and all of it at the end.
func TestReadWhileWriting(t *testing.T) {
	s := open(t, t.TempDir(), Options{})
	w, err := s.Create("k", []byte("head"))
	if err != nil {
		t.Fatal(err)
	}
	const readers, pieces, piece = 8, 20, 10 << 10
	want := pattern("k", 1, pieces*piece)
	progress := make(chan int64, readers*pieces)
	got := make([][]byte, readers)
	var wg sync.WaitGroup
	for i := range readers {
		o, err := w.Object()
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer o.Close()
			var off int64
			for {
				n, done, wait, err := o.Next(off)
				if err != nil {
					t.Error(err)
					return
				}
				if done {
					return
				}
				if wait != nil {
					<-wait
					continue
				}
				p := make([]byte, n)
				if k, err := o.ReadAt(p, off); k != len(p) || err != nil {
					t.Errorf("ReadAt = %d, %v; want %d", k, err, len(p))
					return
				}
				got[i] = append(got[i], p...)
				off += n
				progress <- off
			}
		}()
	}
	for k := range pieces {
		if _, err := w.Write(want[k*piece : (k+1)*piece]); err != nil {
			t.Fatal(err)
		}
		// Every reader reaches the end of piece k before piece k+1 is
		// written: they read the file as it grows.
		for seen := 0; seen < readers; {
			if <-progress == int64((k+1)*piece) {
				seen++
			}
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, g := range got {
		if !bytes.Equal(g, want) {
			t.Errorf("reader %d got %d bytes, not what was written", i, len(g))
		}
	}
	if _, body, ok := get(t, s, "k"); !ok || !bytes.Equal(body, want) {
		t.Errorf("Get after Commit: %d bytes, %v", len(body), ok)
	}
}

// An object open for reading survives its purge and its replacement:
// the file is unlinked, never changed.
func TestOpenObjectOutlivesRemoval(t *testing.T) {
	s := open(t, t.TempDir(), Options{})
	want := pattern("k", 1, 50000)
	put(t, s, "k", "one", want)
	o, err := s.Get("k")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	put(t, s, "k", "two", pattern("k", 2, 60000))
	if ok, err := s.Purge("k"); !ok || err != nil {
		t.Fatalf("Purge = %v, %v", ok, err)
	}
	if _, err := s.Get("k"); err != ErrNotFound {
		t.Errorf("Get after Purge = %v", err)
	}
	got := make([]byte, 50000)
	if n, err := o.ReadAt(got, 0); n != len(got) || err != nil || !bytes.Equal(got, want) || string(o.Head()) != "one" {
		t.Errorf("the open object read %d, %v (head %q); want the first body", n, err, o.Head())
	}
}

func TestPurgePrefix(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Options{})
	for i := range 10 {
		put(t, s, fmt.Sprintf("GET https://a.example/p/%d", i), "", []byte("x"))
		put(t, s, fmt.Sprintf("GET https://a.example/q/%d", i), "", []byte("x"))
	}
	if ok, _ := s.Purge("GET https://a.example/p/3"); !ok {
		t.Error("Purge of a stored key found nothing")
	}
	if ok, _ := s.Purge("GET https://a.example/p/3"); ok {
		t.Error("a second Purge found something")
	}
	n, err := s.PurgePrefix("GET https://a.example/p/")
	if n != 9 || err != nil {
		t.Errorf("PurgePrefix = %d, %v; want 9", n, err)
	}
	for i := range 10 {
		_, _, p := get(t, s, fmt.Sprintf("GET https://a.example/p/%d", i))
		_, _, q := get(t, s, fmt.Sprintf("GET https://a.example/q/%d", i))
		if p || !q {
			t.Errorf("object %d: /p/ found %v, /q/ found %v", i, p, q)
		}
	}
	if files, sum := objectFiles(t, dir); files != 10 {
		t.Errorf("%d files left, want 10", files)
	} else if st, _ := s.Stats(); st.Bytes != sum {
		t.Errorf("total %d, files add up to %d", st.Bytes, sum)
	}
}

// PurgeWhere removes the objects whose key and head match, reading heads
// of every size (past the first read's buffer).
func TestPurgeWhere(t *testing.T) {
	s := open(t, t.TempDir(), Options{})
	long := strings.Repeat("h", 2000)
	for i := range 10 {
		head := "plain"
		if i%2 == 0 {
			head = "tagged " + long
		}
		put(t, s, fmt.Sprintf("k%d", i), head, []byte("x"))
	}
	var keys []string
	n, err := s.PurgeWhere(func(key string, head []byte) bool {
		keys = append(keys, key)
		return strings.HasPrefix(string(head), "tagged ") && strings.HasSuffix(string(head), long)
	})
	if n != 5 || err != nil || len(keys) != 10 {
		t.Fatalf("PurgeWhere = %d, %v after %d keys; want 5 of 10", n, err, len(keys))
	}
	for i := range 10 {
		if _, _, found := get(t, s, fmt.Sprintf("k%d", i)); found != (i%2 == 1) {
			t.Errorf("k%d found %v", i, found)
		}
	}
}

// A restart finds every object; files that are not complete objects
// under their right name are removed.
func TestRestartRebuilds(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Options{})
	for i := range 50 {
		put(t, s, fmt.Sprintf("key%d", i), fmt.Sprintf("head%d", i), pattern("k", i, 100*i))
	}
	s.Close()

	// Damage: a truncated object, one moved under another's name, one
	// whose body length was never set, and a stray file.
	h0, h1, h2 := hashKey("key1"), hashKey("key2"), hashKey("key3")
	if err := os.Truncate(s.path(h0), 40); err != nil {
		t.Fatal(err)
	}
	moved := hashKey("not stored")
	os.MkdirAll(filepath.Dir(s.path(moved)), 0o700)
	if err := os.Rename(s.path(h1), s.path(moved)); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(s.path(h2), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 16)
	f.Close()
	os.WriteFile(filepath.Join(dir, "stray"), []byte("x"), 0o600)

	s2 := open(t, dir, Options{})
	for i := range 50 {
		head, body, ok := get(t, s2, fmt.Sprintf("key%d", i))
		want := i < 1 || i > 3
		if ok != want {
			t.Errorf("key%d found %v after a restart, want %v", i, ok, want)
		} else if ok && (head != fmt.Sprintf("head%d", i) || !bytes.Equal(body, pattern("k", i, 100*i))) {
			t.Errorf("key%d after a restart: %q, %d bytes", i, head, len(body))
		}
	}
	files, sum := objectFiles(t, dir)
	st, err := s2.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if files != 47 || st.Objects != 47 || st.Bytes != sum {
		t.Errorf("%d files of %d bytes after a restart; Stats = %+v", files, sum, st)
	}
	if _, err := os.Stat(filepath.Join(dir, "stray")); err != nil {
		t.Errorf("a file outside the tree was touched: %v", err)
	}
}

// The temporary files of a live Store stay; those of a Store whose
// lock file no one holds (as a killed process leaves) are removed by
// Open and Rescan, and never found.
func TestTempFiles(t *testing.T) {
	if !sharedAcrossProcesses {
		t.Skip("no flock")
	}
	dir := t.TempDir()
	s := open(t, dir, Options{})
	w, err := s.Create("live", nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("still writing"))
	dead := filepath.Join(dir, "tmp", "0123456789abcdef")
	if err := os.Mkdir(dead, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dead + ".lock", filepath.Join(dead, fmt.Sprintf("%x.123", hashKey("dead")))} {
		if err := os.WriteFile(p, []byte(magic), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "tmp", "stray"), 0o700); err != nil {
		t.Fatal(err)
	}
	other := open(t, dir, Options{}) // a Store of another process
	ow, err := other.Create("other", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Rescan(); err != nil {
		t.Fatal(err)
	}
	if names := temps(t, dir); len(names) != 2 {
		t.Errorf("after Rescan the temporary files are %q, want only the two live writers'", names)
	}
	for _, p := range []string{dead, dead + ".lock", filepath.Join(dir, "tmp", "stray")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is still there", p)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatalf("Commit after a Rescan: %v", err)
	}
	if err := ow.Commit(); err != nil {
		t.Fatalf("the other Store's Commit after a Rescan: %v", err)
	}
	if _, err := s.Get("dead"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of a dead writer's key = %v", err)
	}
}

// Under a churn of distinct keys the total never goes over the budget
// and stays the sum of the files; recently read objects survive.
func TestBudgetUnderChurn(t *testing.T) {
	dir := t.TempDir()
	const budget = 200 << 10
	s := open(t, dir, Options{Size: budget})
	hot := pattern("hot", 0, 3000)
	put(t, s, "hot", "", hot)
	for i := range 600 {
		put(t, s, fmt.Sprintf("cold%d", i), "", pattern("cold", i, 1000+i*37%9000))
		if _, _, ok := get(t, s, "hot"); !ok {
			t.Fatalf("the object read after every write was evicted at write %d", i)
		}
		st, err := s.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if st.Bytes > budget {
			t.Fatalf("write %d: %d bytes stored, over the budget of %d", i, st.Bytes, budget)
		}
	}
	files, sum := objectFiles(t, dir)
	st, _ := s.Stats()
	if st.Bytes != sum || st.Objects != files || st.Evictions == 0 {
		t.Errorf("%d files of %d bytes; Stats = %+v", files, sum, st)
	}
}

// MaxObjects bounds the index, and with it the objects kept.
func TestMaxObjects(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Options{MaxObjects: 10})
	for i := range 30 {
		put(t, s, fmt.Sprintf("k%d", i), "", []byte("x"))
	}
	if files, _ := objectFiles(t, dir); files != 10 {
		t.Errorf("%d files, want 10", files)
	}
	for i := 20; i < 30; i++ {
		if _, _, ok := get(t, s, fmt.Sprintf("k%d", i)); !ok {
			t.Errorf("recent object k%d was evicted", i)
		}
	}
}

func TestSetHead(t *testing.T) {
	s := open(t, t.TempDir(), Options{})
	body := pattern("k", 0, 70000)
	put(t, s, "k", "old head", body)
	old, err := s.Get("k")
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := s.SetHead("k", []byte("a longer new head")); err != nil {
		t.Fatal(err)
	}
	if head, got, ok := get(t, s, "k"); !ok || head != "a longer new head" || !bytes.Equal(got, body) {
		t.Errorf("after SetHead: %v %q, %d bytes", ok, head, len(got))
	}
	if string(old.Head()) != "old head" {
		t.Errorf("an object open before SetHead changed its head to %q", old.Head())
	}
	if err := s.SetHead("missing", nil); err != ErrNotFound {
		t.Errorf("SetHead of a missing key = %v", err)
	}
	if files, _ := objectFiles(t, s.Dir()); files != 1 {
		t.Errorf("%d files after SetHead, want 1", files)
	}
}

// A freshened head being copied when the object is purged, or replaced
// by a new response, publishes nothing: a purge is never undone.
func TestSetHeadAfterPurge(t *testing.T) {
	for _, then := range []string{"purged", "replaced"} {
		t.Run(then, func(t *testing.T) {
			s := open(t, t.TempDir(), Options{})
			put(t, s, "k", "old head", []byte("old body"))
			// SetHead's steps, with the purge or the new response
			// between the copy and the commit.
			o, err := s.Get("k")
			if err != nil {
				t.Fatal(err)
			}
			fi, err := o.File().Stat()
			o.Close()
			if err != nil {
				t.Fatal(err)
			}
			w, err := s.Create("k", []byte("freshened head"))
			if err != nil {
				t.Fatal(err)
			}
			w.replaces = fi
			w.Write([]byte("old body"))
			want := ""
			if then == "purged" {
				if ok, err := s.Purge("k"); !ok || err != nil {
					t.Fatalf("Purge = %v, %v", ok, err)
				}
			} else {
				put(t, s, "k", "new head", []byte("new body"))
				want = "new head"
			}
			if err := w.Commit(); err != ErrNotFound {
				t.Errorf("Commit = %v, want ErrNotFound", err)
			}
			head, _, ok := get(t, s, "k")
			if ok != (want != "") || head != want {
				t.Errorf("after the commit: stored %v, head %q; want %q", ok, head, want)
			}
			wantFiles := 0
			if want != "" {
				wantFiles = 1
			}
			if files, _ := objectFiles(t, s.Dir()); files != wantFiles {
				t.Errorf("%d object files, want %d", files, wantFiles)
			}
		})
	}
}

// The index costs under 100 bytes an object, whatever the keys.
func TestIndexMemory(t *testing.T) {
	s := open(t, t.TempDir(), Options{})
	const n = 100000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		s.remember(hashKey(strconv.Itoa(i)))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("%.0f bytes an object", per)
	if per > 100 {
		t.Errorf("the index costs %.0f bytes an object", per)
	}
	runtime.KeepAlive(s)
}

// A hit moves the file's mtime on once it is over touchInterval old, and
// a Rescan (as in another process) orders the objects by it.
func TestHitsShareRecency(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Options{})
	now := time.Now()
	s.now = func() time.Time { return now }
	put(t, s, "a", "", []byte("a"))
	put(t, s, "b", "", []byte("b"))
	old := now.Add(-time.Hour)
	for _, k := range []string{"a", "b"} {
		if err := os.Chtimes(s.path(hashKey(k)), old, old); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(2 * touchInterval)
	get(t, s, "a")
	fi, err := os.Stat(s.path(hashKey("a")))
	if err != nil {
		t.Fatal(err)
	}
	if !fi.ModTime().Equal(now) {
		t.Errorf("after a hit the mtime is %v, want %v", fi.ModTime(), now)
	}
	other := open(t, dir, Options{})
	if h, ok := other.victim(hash{}); !ok || h != hashKey("b") {
		t.Errorf("another Store would evict %x first, want b's %x", h, hashKey("b"))
	}
}

func TestSync(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, Options{Sync: true})
	put(t, s, "k", "h", []byte("synced"))
	if head, body, ok := get(t, s, "k"); !ok || head != "h" || string(body) != "synced" {
		t.Errorf("Get with Sync = %v %q %q", ok, head, body)
	}
}

// Close waits for the commits under way; those after it fail with
// ErrClosed and leave nothing stored, and Create after it refuses.
func TestCloseDuringCommits(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make(chan error, 64)
	for i := range 64 {
		w, err := s.Create(fmt.Sprintf("k%d", i), []byte("h"))
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("body"))
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- w.Commit()
		}()
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(results)
	committed := 0
	for err := range results {
		switch {
		case err == nil:
			committed++
		case !errors.Is(err, ErrClosed):
			t.Errorf("a Commit racing Close failed with %v, want nil or ErrClosed", err)
		}
	}
	if _, err := s.Create("late", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Create after Close: %v, want ErrClosed", err)
	}
	// What was committed is there for the next Store; the rest is not.
	s2 := open(t, dir, Options{})
	found := 0
	for i := range 64 {
		if _, _, ok := get(t, s2, fmt.Sprintf("k%d", i)); ok {
			found++
		}
	}
	if found != committed {
		t.Errorf("%d objects found after reopening, %d were committed", found, committed)
	}
}
