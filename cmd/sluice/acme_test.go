package main_test

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
)

// acmeConn is a keep-alive TLS connection to a worker, and what it saw.
type acmeConn struct {
	c      *tls.Conn
	br     *bufio.Reader
	worker int      // the worker that answered (the status page's "worker")
	serial *big.Int // of the certificate it was given
}

// dialWorker opens a TLS connection to addr and asks the status page
// which worker serves it. It returns nil if the handshake fails (which
// sluicetest.DialTLS would fail the test for).
func dialWorker(t *testing.T, addr string, cfg *tls.Config) *acmeConn {
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return nil
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	ac := &acmeConn{c: c, br: bufio.NewReader(c), serial: c.ConnectionState().PeerCertificates[0].SerialNumber}
	w, err := ac.whoAnswers()
	if err != nil {
		t.Errorf("GET /status over TLS: %v", err)
		c.Close()
		return nil
	}
	ac.worker = w
	return ac
}

// whoAnswers asks the status page on ac which worker answers.
func (ac *acmeConn) whoAnswers() (int, error) {
	fmt.Fprintf(ac.c, "GET /status?format=json HTTP/1.1\r\nHost: %s\r\n\r\n", "sluice.test")
	resp, err := http.ReadResponse(ac.br, nil)
	if err != nil {
		return 0, err
	}
	b, _ := io.ReadAll(resp.Body)
	var v struct{ Worker int }
	if err := json.Unmarshal(b, &v); err != nil {
		return 0, fmt.Errorf("%v: %s", err, b)
	}
	return v.Worker, nil
}

// eachWorker opens bursts of concurrent TLS connections to addr until
// every one of workers has answered one, and returns a connection per
// worker, left open (closed when the test ends). It fails the test if
// some worker has answered none after a minute.
func eachWorker(t *testing.T, addr string, cfg *tls.Config, workers []int, ok func(*acmeConn) bool) map[int]*acmeConn {
	t.Helper()
	got := map[int]*acmeConn{}
	for deadline := time.Now().Add(time.Minute); len(got) < len(workers); {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute of connections, only workers %v answered with the certificate wanted; want %v", keys(got), workers)
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				ac := dialWorker(t, addr, cfg)
				if ac == nil {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if got[ac.worker] == nil && ok(ac) {
					got[ac.worker] = ac
					t.Cleanup(func() { ac.c.Close() })
				} else {
					ac.c.Close()
				}
			})
		}
		wg.Wait()
	}
	return got
}

func keys(m map[int]*acmeConn) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	return out
}

// With workers the master alone talks to the ACME authority: the
// certificate is ordered once, the workers answer the authority's
// challenge from the shared data directory (TLS-ALPN-01 here, on
// whichever worker the validator reaches) and serve the certificate;
// the renewal, ordered once by the master, reaches every worker, while
// the keep-alive connections made on the old certificate carry on. With
// user: nobody the workers, which run as nobody, read what the master,
// root, writes.
func TestWorkersACME(t *testing.T) {
	needWorkers(t)
	for _, user := range []string{"", "nobody"} {
		t.Run("user="+user, func(t *testing.T) {
			dir := t.TempDir()
			if user != "" {
				nobody(t)
				dir = sharedDir(t)
			}
			testWorkersACME(t, dir, user)
		})
	}
}

func testWorkersACME(t *testing.T, dir, user string) {
	ports := sluicetest.FreePorts(t, 2)
	httpPort, tlsPort := ports[0], ports[1]
	pebble := sluicetest.StartPebble(t, httpPort, tlsPort, 24*time.Second)
	file := filepath.Join(dir, "w.yaml")
	userLine := ""
	if user != "" {
		userLine = "user: " + user + "\n"
	}
	writeConfig(t, file, fmt.Sprintf(`workers: 2
health: {interval: 100ms, timeout: 2s}
%slisten:
  - 127.0.0.1:%d
  - address: 127.0.0.1:%d
    tls:
      acme:
        domains: [sluice.test]
        directory: %s
        ca_roots: %s
        data: acme
routes:
  - match: /status
    pipeline: [status]
  - match: /
    pipeline:
      - text: hi
`, userLine, httpPort, tlsPort, pebble.Directory, pebble.CAFile))
	s := start(t, "serve", "-c", file)
	s.waitLog(t, "workers ready", 1)
	addr := fmt.Sprintf("127.0.0.1:%d", tlsPort)
	client := &tls.Config{RootCAs: pebble.Roots(t), ServerName: "sluice.test"}

	first := eachWorker(t, addr, client, []int{1, 2}, func(*acmeConn) bool { return true })
	serial := first[1].serial
	if first[2].serial.Cmp(serial) != 0 {
		t.Errorf("workers 1 and 2 serve different certificates: %s and %s", serial, first[2].serial)
	}
	if n := pebble.Orders(); n != 1 {
		t.Errorf("%d orders at the authority, want 1", n)
	}
	if n := strings.Count(s.stderr(), `msg="certificate ready"`); n != 1 {
		t.Errorf("%d \"certificate ready\" in the log, want 1 (the master's)", n)
	}

	// The renewal: a third of the lifetime before expiry, ordered by the
	// master once, read by each worker at the handshakes that follow.
	renewed := eachWorker(t, addr, client, []int{1, 2}, func(ac *acmeConn) bool { return ac.serial.Cmp(serial) != 0 })
	if renewed[1].serial.Cmp(renewed[2].serial) != 0 {
		t.Errorf("after the renewal workers 1 and 2 serve different certificates")
	}
	if n := pebble.Orders(); n != 2 {
		t.Errorf("%d orders at the authority after the renewal, want 2", n)
	}
	for w, ac := range first {
		if got, err := ac.whoAnswers(); err != nil || got != w {
			t.Errorf("the keep-alive connection to worker %d from before the renewal: worker %d, %v", w, got, err)
		}
	}
	if strings.Contains(s.stderr(), "cannot obtain") {
		t.Errorf("a failed order:\n%s", s.stderr())
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
	if t.Failed() {
		t.Logf("sluice's log:\n%s", s.stderr())
	}
}

// Without workers, a server started as root with user: nobody asks for
// its certificates as nobody, once it has switched: the data directory,
// made by root, is given to nobody, and the account key and the
// certificates in it, the renewed one too, are nobody's, so the server
// keeps reading and renewing them. A data directory an earlier run as
// root left (its account key root's, 0600) is given to nobody too.
func TestACMEUser(t *testing.T) {
	u := nobody(t)
	for _, rootsFiles := range []bool{false, true} {
		t.Run(fmt.Sprintf("roots_files=%v", rootsFiles), func(t *testing.T) {
			dir := sharedDir(t)
			data := filepath.Join(dir, "acme")
			if rootsFiles {
				writeAccountKey(t, data)
			}
			testACMEUser(t, dir, u)
		})
	}
}

// writeAccountKey makes the data directory data, and in it an ACME
// account key as autocert writes it, as root.
func writeAccountKey(t *testing.T, data string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	if err := os.WriteFile(filepath.Join(data, "acme_account+key"), pemKey, 0o600); err != nil {
		t.Fatal(err)
	}
}

func testACMEUser(t *testing.T, dir string, u *user.User) {
	ports := sluicetest.FreePorts(t, 2)
	httpPort, tlsPort := ports[0], ports[1]
	pebble := sluicetest.StartPebble(t, httpPort, tlsPort, 12*time.Second)
	file := filepath.Join(dir, "acme.yaml")
	writeConfig(t, file, fmt.Sprintf(`user: nobody
listen:
  - 127.0.0.1:%d
  - address: 127.0.0.1:%d
    tls:
      acme:
        domains: [sluice.test]
        directory: %s
        ca_roots: %s
        data: acme
routes:
  - match: /
    pipeline:
      - text: hi
`, httpPort, tlsPort, pebble.Directory, pebble.CAFile))
	s := start(t, "serve", "-c", file)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sluice's log:\n%s", s.stderr())
		}
	})
	s.waitLog(t, `msg="serving as user"`, 1)
	addr := fmt.Sprintf("127.0.0.1:%d", tlsPort)
	client := &tls.Config{RootCAs: pebble.Roots(t), ServerName: "sluice.test"}
	serialNow := func() *big.Int {
		c, err := tls.Dial("tcp", addr, client)
		if err != nil {
			return nil
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber
	}

	var first *big.Int
	sluicetest.WaitFor(t, "a certificate from pebble", func() bool {
		first = serialNow()
		return first != nil
	})
	sluicetest.WaitFor(t, "the certificate renewed", func() bool {
		n := serialNow()
		return n != nil && n.Cmp(first) != 0
	})
	if n := pebble.Orders(); n < 2 {
		t.Errorf("%d orders at the authority after the renewal, want 2 or more", n)
	}
	if strings.Contains(s.stderr(), "cannot obtain") {
		t.Errorf("a failed order")
	}

	data := filepath.Join(dir, "acme")
	entries, err := os.ReadDir(data)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"."}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	for _, want := range []string{"acme_account+key", "sluice.test"} {
		if !slices.Contains(names, want) {
			t.Errorf("the data directory holds %v, want %s among them", names[1:], want)
		}
	}
	for _, name := range names {
		info, err := os.Lstat(filepath.Join(data, name))
		if err != nil {
			t.Error(err)
			continue
		}
		st := info.Sys().(*syscall.Stat_t)
		if uid := strconv.Itoa(int(st.Uid)); uid != u.Uid {
			t.Errorf("%s in the data directory: owned by uid %s, want nobody's (%s)", name, uid, u.Uid)
		}
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
}
