//lint:file-ignore SA1019 the test drives x/net/http2's client on purpose.

package engine

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// What idle TLS connections cost the server, in memory: TestTLSIdleMemory
// holds tlsIdleEnv connections idle on a TLS server in a child process
// (TestTLSIdleChild) and reports its heap and resident set per
// connection, and, with tlsIdleProfileEnv set, writes the child's heap
// profile there. It asserts that every HTTP/1.1 connection parks, holding
// no goroutine and less than tlsIdleHeapPerConn of heap, and that every
// connection is answered when it speaks again. docs/benchmarks.md ("Idle TLS connections") has the figures;
// bench/cmd/tlsidle compares them with nginx's and h2o's.

// tlsIdleHeapPerConn bounds the heap a parked TLS HTTP/1.1 connection
// holds: about 7.3 KB measured (docs/benchmarks.md), where one that kept
// its session would hold 19 KB more.
const tlsIdleHeapPerConn = 12 << 10

const (
	tlsIdleEnv        = "SLUICE_TLSIDLE"         // connections; the test runs only if set
	tlsIdleProtoEnv   = "SLUICE_TLSIDLE_PROTO"   // "h1" (default) or "h2"
	tlsIdleProfileEnv = "SLUICE_TLSIDLE_PROFILE" // where the child writes its heap profile
)

// selfSigned returns a certificate for 127.0.0.1 with an ECDSA P-256
// key, signed by itself.
func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestTLSIdleChild is the server of TestTLSIdleMemory, not a test: a TLS
// listener offering h2 and http/1.1, whose handler answers GET /stats
// with "parked=P heap=H goroutines=G" (as TestC50KChild's), after
// writing the heap profile if asked, and any other GET with its path.
func TestTLSIdleChild(t *testing.T) {
	if os.Getenv("SLUICE_TLSIDLE_CHILD") == "" {
		t.Skip("the server of TestTLSIdleMemory")
	}
	n, err := strconv.Atoi(os.Getenv(tlsIdleEnv))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raiseFileLimit(n + 64); err != nil {
		t.Fatal(err)
	}
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Limits: Limits{IdleTimeout: time.Hour, BusyIdleTimeout: time.Hour, MaxConns: n + 64}}
	profile := os.Getenv(tlsIdleProfileEnv)
	if profile != "" {
		runtime.MemProfileRate = 512 // finer than the default, to see small objects
	}
	s.Handler = HandlerFunc(func(w ResponseWriter, r *Request) {
		if string(r.Path) != "/stats" {
			w.Write(r.Path)
			return
		}
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if profile != "" && r.Header("Profile") != nil {
			if f, err := os.Create(profile); err == nil {
				pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
		}
		fmt.Fprintf(writerOnly{w}, "parked=%d heap=%d goroutines=%d stacks=%d", s.stats.parked.Load(), ms.HeapAlloc,
			runtime.NumGoroutine(), ms.StackInuse)
	})
	cfg := &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}, NextProtos: []string{"h2", "http/1.1"}}
	fmt.Println(ln.Addr())
	s.ServeWith(ln, ListenerOptions{TLS: cfg})
}

// tlsIdleClient is one TLS client connection, speaking HTTP/1.1 or,
// with h2 set, HTTP/2.
type tlsIdleClient struct {
	tc *tls.Conn
	br *bufio.Reader
	h2 *http2.ClientConn
}

func dialTLSIdle(addr string, src *net.TCPAddr, h2 bool) (*tlsIdleClient, error) {
	d := net.Dialer{LocalAddr: src}
	cfg := &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}
	if h2 {
		cfg.NextProtos = []string{"h2"}
	}
	tc, err := tls.DialWithDialer(&d, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	c := &tlsIdleClient{tc: tc}
	if h2 {
		c.h2, err = (&http2.Transport{}).NewClientConn(tc)
		if err != nil {
			tc.Close()
			return nil, err
		}
	} else {
		c.br = bufio.NewReaderSize(tc, 512)
	}
	return c, nil
}

// get asks for path (with header Profile, if profile) and returns the
// answer's body, failing unless it is a 200.
func (c *tlsIdleClient) get(path string, profile bool) (string, error) {
	c.tc.SetDeadline(time.Now().Add(2 * time.Minute))
	defer c.tc.SetDeadline(time.Time{})
	var resp *http.Response
	if c.h2 != nil {
		req, _ := http.NewRequest("GET", "https://127.0.0.1"+path, nil)
		if profile {
			req.Header.Set("Profile", "1")
		}
		var err error
		if resp, err = c.h2.RoundTrip(req); err != nil {
			return "", err
		}
	} else {
		hdr := ""
		if profile {
			hdr = "Profile: 1\r\n"
		}
		if _, err := io.WriteString(c.tc, "GET "+path+" HTTP/1.1\r\nHost: a\r\n"+hdr+"\r\n"); err != nil {
			return "", err
		}
		var err error
		if resp, err = http.ReadResponse(c.br, nil); err != nil {
			return "", err
		}
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return "", err
	}
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("GET %s: %d %q", path, resp.StatusCode, body)
	}
	return string(body), nil
}

// readTLSIdleStats asks the server for its stats on a connection of its
// own, closed at once, and adds its resident set.
func readTLSIdleStats(t *testing.T, addr string, pid int, profile bool) tlsIdleStats {
	t.Helper()
	c, err := dialTLSIdle(addr, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.tc.Close()
	body, err := c.get("/stats", profile)
	if err != nil {
		t.Fatal(err)
	}
	var st tlsIdleStats
	if _, err := fmt.Sscanf(body, "parked=%d heap=%d goroutines=%d stacks=%d", &st.parked, &st.heap, &st.goroutines, &st.stacks); err != nil {
		t.Fatalf("stats %q: %v", body, err)
	}
	st.rss = procKB(t, fmt.Sprintf("/proc/%d/status", pid), "VmRSS:")
	return st
}

// tlsIdleStats is what TestTLSIdleChild reports, and its resident set.
type tlsIdleStats struct {
	c50kStats
	stacks int64 // goroutine stacks in use
}

// TestTLSIdleMemory holds tlsIdleEnv idle TLS connections (HTTP/1.1, or
// HTTP/2 with tlsIdleProtoEnv=h2), each having made one request, and
// reports what they cost the server; then every one speaks again.
func TestTLSIdleMemory(t *testing.T) {
	env := os.Getenv(tlsIdleEnv)
	if env == "" {
		t.Skipf("set %s=10000 to run it (and %s=h2 for HTTP/2, %s=FILE for a heap profile)", tlsIdleEnv, tlsIdleProtoEnv, tlsIdleProfileEnv)
	}
	n, err := strconv.Atoi(env)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a number of connections", tlsIdleEnv, env)
	}
	h2 := os.Getenv(tlsIdleProtoEnv) == "h2"
	if hard, err := raiseFileLimit(n + 64); err != nil {
		cannotRun(t, "%d connections need %d descriptors, and the hard limit is %d: raise it (ulimit -Hn, as root) or set %s lower (make test-tlsidle TLSIDLE=N)", n, n+64, hard, tlsIdleEnv)
	}
	addr, pid, stderr := startChild(t, "TestTLSIdleChild", "SLUICE_TLSIDLE_CHILD=1", tlsIdleEnv+"="+env,
		tlsIdleProfileEnv+"="+os.Getenv(tlsIdleProfileEnv))
	before := readTLSIdleStats(t, addr, pid, false)

	clients := make([]*tlsIdleClient, n)
	t.Cleanup(func() {
		for _, c := range clients {
			if c != nil {
				c.tc.Close()
			}
		}
	})
	cs := &c50kClients{conns: make([]net.Conn, n)}
	var mu sync.Mutex
	err = cs.each(func(i int) error {
		c, err := dialTLSIdle(addr, c50kSource(i), h2)
		if err != nil {
			return err
		}
		mu.Lock()
		clients[i] = c
		mu.Unlock()
		path := fmt.Sprintf("/c%d/first", i)
		if got, err := c.get(path, false); err != nil || got != path {
			return fmt.Errorf("GET %s: %q, %v", path, got, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("opening the connections: %v\nserver log:\n%.2000s", err, stderr.String())
	}

	// HTTP/1.1 connections park after their first exchange; HTTP/2 ones
	// wait on x/net's goroutines.
	var idle tlsIdleStats
	deadline := time.Now().Add(2 * time.Minute)
	for idle = readTLSIdleStats(t, addr, pid, false); !h2 && idle.parked != int64(n); idle = readTLSIdleStats(t, addr, pid, false) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d connections parked", idle.parked, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if os.Getenv(tlsIdleProfileEnv) != "" {
		idle = readTLSIdleStats(t, addr, pid, true)
	}
	proto := "HTTP/1.1"
	if h2 {
		proto = "HTTP/2"
	}
	perConn := func(a, b int64) float64 { return float64(b-a) / float64(n) }
	t.Logf("%d idle TLS %s connections, %d parked: server heap %.0f B, goroutine stacks %.0f B and resident set %.0f B "+
		"per connection (heap %d → %d MB, RSS %d → %d MB), goroutines %d → %d",
		n, proto, idle.parked, perConn(before.heap, idle.heap), perConn(before.stacks, idle.stacks), perConn(before.rss, idle.rss),
		before.heap>>20, idle.heap>>20, before.rss>>20, idle.rss>>20, before.goroutines, idle.goroutines)

	if !h2 {
		// Parked, a connection holds crypto/tls's state and the
		// engine's small one: no session (19 KB), no goroutine.
		if heap := perConn(before.heap, idle.heap); heap > tlsIdleHeapPerConn {
			t.Errorf("the server's heap grew by %.0f B per parked TLS connection, over %d", heap, tlsIdleHeapPerConn)
		}
		if idle.goroutines > before.goroutines+300 { // runners kept for reuse: 256 at most
			t.Errorf("the server runs %d goroutines with %d parked TLS connections, %d before them", idle.goroutines, n, before.goroutines)
		}
	}

	// Every connection speaks again and is answered.
	err = cs.each(func(i int) error {
		path := fmt.Sprintf("/c%d/again", i)
		if got, err := clients[i].get(path, false); err != nil || got != path {
			return fmt.Errorf("GET %s: %q, %v", path, got, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("speaking again: %v\nserver log:\n%.2000s", err, strings.TrimSpace(stderr.String()))
	}
}
