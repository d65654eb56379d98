package disk

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestDiskChild is the other process of the tests that share a
// directory between processes: it opens the Store in the directory its
// environment names and runs the commands it reads, one a line,
// answering each with a line that starts "R: ".
func TestDiskChild(t *testing.T) {
	dir := os.Getenv("SLUICE_DISK_CHILD")
	if dir == "" {
		t.Skip("run by the tests of two processes")
	}
	size, _ := strconv.ParseInt(os.Getenv("SLUICE_DISK_SIZE"), 10, 64)
	s := open(t, dir, Options{Size: size})
	in := bufio.NewScanner(os.Stdin)
	reply := func(format string, args ...any) { fmt.Printf("R: "+format+"\n", args...) }
	for in.Scan() {
		f := strings.Fields(in.Text())
		num := func(i int) int { n, _ := strconv.Atoi(f[i]); return n }
		switch f[0] {
		case "put": // put KEY VERSION SIZE
			put(t, s, f[1], "v"+f[2], pattern(f[1], num(2), num(3)))
			reply("ok")
		case "get": // get KEY: the head and the SHA-256 of the body
			head, body, ok := get(t, s, f[1])
			reply("%v %s %x", ok, head, sha256.Sum256(body))
		case "purge":
			ok, err := s.Purge(f[1])
			reply("%v %v", ok, err)
		case "churn": // churn KEY VERSIONS SIZE: replace KEY again and again
			for v := range num(2) {
				put(t, s, f[1], "v"+strconv.Itoa(v), pattern(f[1], v, num(3)))
			}
			reply("ok")
		case "fill": // fill PREFIX N: N distinct objects of various sizes
			for i := range num(2) {
				key := f[1] + strconv.Itoa(i)
				put(t, s, key, "v0", pattern(key, 0, 500+i*131%7000))
			}
			reply("ok")
		case "hang": // hang KEY: start writing KEY, then wait to be killed
			w, err := s.Create(f[1], nil)
			if err != nil {
				t.Fatal(err)
			}
			w.Write([]byte("half an object"))
			reply("writing")
		}
	}
}

// child is a process running TestDiskChild on a directory.
type child struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.Writer
	out *bufio.Scanner
}

func startChild(t *testing.T, dir string, size int64) *child {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a child process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDiskChild$", "-test.v")
	cmd.Env = append(os.Environ(), "SLUICE_DISK_CHILD="+dir, "SLUICE_DISK_SIZE="+strconv.FormatInt(size, 10))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return &child{t: t, cmd: cmd, in: in, out: bufio.NewScanner(out)}
}

// do sends the child a command and returns its answer.
func (c *child) do(format string, args ...any) string {
	c.t.Helper()
	fmt.Fprintf(c.in, format+"\n", args...)
	for c.out.Scan() {
		if r, ok := strings.CutPrefix(c.out.Text(), "R: "); ok {
			return r
		}
	}
	c.t.Fatalf("the child process ended: %v", c.out.Err())
	return ""
}

// Two processes see each other's objects, purges and evictions.
func TestTwoProcessesShare(t *testing.T) {
	if !sharedAcrossProcesses {
		t.Skip("no flock")
	}
	dir := t.TempDir()
	s := open(t, dir, Options{})
	c := startChild(t, dir, 0)

	body := pattern("a", 1, 20000)
	put(t, s, "a", "v1", body)
	if got, want := c.do("get a"), fmt.Sprintf("true v1 %x", sha256.Sum256(body)); got != want {
		t.Errorf("the child's get of the parent's object: %q, want %q", got, want)
	}
	c.do("put b 2 30000")
	if head, got, ok := get(t, s, "b"); !ok || head != "v2" || !bytes.Equal(got, pattern("b", 2, 30000)) {
		t.Errorf("the parent's get of the child's object: %v %q, %d bytes", ok, head, len(got))
	}
	if got := c.do("purge a"); got != "true <nil>" {
		t.Errorf("the child's purge: %q", got)
	}
	if _, _, ok := get(t, s, "a"); ok {
		t.Error("the parent still finds what the child purged")
	}
	if ok, _ := s.Purge("b"); !ok {
		t.Error("the parent's purge of the child's object found nothing")
	}
	if got := c.do("get b"); !strings.HasPrefix(got, "false") {
		t.Errorf("the child still finds what the parent purged: %q", got)
	}
	files, sum := objectFiles(t, dir)
	if st, _ := s.Stats(); files != 0 || st.Bytes != sum {
		t.Errorf("%d files of %d bytes; the total is %d", files, sum, st.Bytes)
	}
}

// While one process replaces an object again and again, the other reads
// it: every read is one whole version, never a mix or a torn one.
func TestTwoProcessesNoTornReads(t *testing.T) {
	if !sharedAcrossProcesses {
		t.Skip("no flock")
	}
	dir := t.TempDir()
	s := open(t, dir, Options{})
	c := startChild(t, dir, 0)
	const size = 100 << 10
	done := make(chan string)
	go func() { done <- c.do("churn k 300 %d", size) }()
	reads, versions := 0, map[string]bool{}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		head, body, ok := get(t, s, "k")
		if !ok {
			continue
		}
		v, err := strconv.Atoi(strings.TrimPrefix(head, "v"))
		if err != nil || !bytes.Equal(body, pattern("k", v, size)) {
			t.Fatalf("read %d: head %q with %d bytes that are not that version's", reads, head, len(body))
		}
		reads++
		versions[head] = true
	}
	t.Logf("%d reads saw %d versions", reads, len(versions))
	if head, _, ok := get(t, s, "k"); !ok || head != "v299" {
		t.Errorf("after the churn the object is %q, %v; want v299", head, ok)
	}
	if files, sum := objectFiles(t, dir); files != 1 {
		t.Errorf("%d files (%d bytes) after replacing one object, want 1", files, sum)
	}
}

// Two processes writing distinct objects at once keep the directory
// under the budget they share, and the total stays what the files add
// up to.
func TestTwoProcessesBudget(t *testing.T) {
	if !sharedAcrossProcesses {
		t.Skip("no flock")
	}
	dir := t.TempDir()
	const budget = 300 << 10
	s := open(t, dir, Options{Size: budget})
	c := startChild(t, dir, budget)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if got := c.do("fill child 400"); got != "ok" {
			t.Errorf("the child's fill: %q", got)
		}
	}()
	for i := range 400 {
		key := "parent" + strconv.Itoa(i)
		put(t, s, key, "v0", pattern(key, 0, 500+i*131%7000))
	}
	wg.Wait()
	files, sum := objectFiles(t, dir)
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if sum > budget || st.Bytes != sum {
		t.Errorf("%d files of %d bytes under a budget of %d; the total is %d", files, sum, budget, st.Bytes)
	}
	// Both processes' objects are among the survivors: each evicts
	// what it knows least recently used, not only its own.
	if _, _, ok := get(t, s, "parent399"); !ok {
		t.Error("the parent's last object was evicted")
	}
	if got := c.do("get child399"); !strings.HasPrefix(got, "true") {
		t.Error("the child's last object was evicted")
	}
}

// A writer killed in the middle of an object leaves a temporary file
// that no one finds, which the next Open or Rescan removes, and not
// before the writer is dead.
func TestKilledWriter(t *testing.T) {
	if !sharedAcrossProcesses {
		t.Skip("no flock")
	}
	dir := t.TempDir()
	s := open(t, dir, Options{})
	c := startChild(t, dir, 0)
	if got := c.do("hang k"); got != "writing" {
		t.Fatalf("the child: %q", got)
	}
	if err := s.Rescan(); err != nil {
		t.Fatal(err)
	}
	if names := temps(t, dir); len(names) != 1 {
		t.Fatalf("a live writer's temporary file was removed: %q", names)
	}
	if _, err := s.Get("k"); err != ErrNotFound {
		t.Errorf("Get of an object being written elsewhere = %v", err)
	}
	c.cmd.Process.Kill()
	c.cmd.Wait()
	s2 := open(t, dir, Options{})
	if names := temps(t, dir); len(names) != 0 {
		t.Errorf("after a restart the dead writer's file is still there: %q", names)
	}
	if _, err := s2.Get("k"); err != ErrNotFound {
		t.Errorf("Get of a dead writer's object = %v", err)
	}
}
