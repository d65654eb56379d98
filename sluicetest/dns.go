package sluicetest

import (
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// DNSServer is a DNS server for tests: it answers A, AAAA and SRV queries
// over UDP and TCP on loopback, from records the test sets and changes
// while it runs (an SRV answer carries its targets' addresses as
// additional records, as Consul's and Kubernetes' do), and counts the
// queries. Its methods are safe for concurrent use.
type DNSServer struct {
	// Addr is the server's address, host:port, the same for UDP and TCP.
	Addr string

	mu      sync.Mutex
	records map[dnsKey][]dnsmessage.Resource
	rcode   dnsmessage.RCode // answered to every query when not success
	silent  bool             // no answer at all
	queries map[dnsKey]int
}

type dnsKey struct {
	name string // lower-case, with the final dot
	typ  dnsmessage.Type
}

// SRV is one SRV record of DNSServer.SetSRV.
type SRV struct {
	Target                 string
	Port, Priority, Weight uint16
}

// StartDNS starts a DNSServer until the test ends.
func StartDNS(t testing.TB) *DNSServer {
	t.Helper()
	// A UDP port whose TCP twin is free: a few tries.
	var pc net.PacketConn
	var ln net.Listener
	var err error
	for range 20 {
		if pc, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		if ln, err = net.Listen("tcp", pc.LocalAddr().String()); err == nil {
			break
		}
		pc.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	s := &DNSServer{Addr: pc.LocalAddr().String(), records: map[dnsKey][]dnsmessage.Resource{}, queries: map[dnsKey]int{}}
	var wg sync.WaitGroup
	t.Cleanup(func() { pc.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if out := s.answer(buf[:n], true); out != nil {
				pc.WriteTo(out, from)
			}
		}
	}()
	ServeConns(t, ln, func(c net.Conn) {
		var size [2]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		msg := make([]byte, binary.BigEndian.Uint16(size[:]))
		if _, err := io.ReadFull(c, msg); err != nil {
			return
		}
		if out := s.answer(msg, false); out != nil {
			c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(out))), out...))
		}
	})
	return s
}

func fqdn(name string) string {
	name = strings.ToLower(name)
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	return name
}

// SetA sets name's A and AAAA records (none: no address) to addrs, with
// ttl seconds.
func (s *DNSServer) SetA(name string, ttl uint32, addrs ...string) {
	n := dnsmessage.MustNewName(fqdn(name))
	var a, aaaa []dnsmessage.Resource
	for _, addr := range addrs {
		ip := netip.MustParseAddr(addr)
		if ip.Is4() {
			a = append(a, dnsmessage.Resource{Header: dnsmessage.ResourceHeader{Name: n, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: ttl},
				Body: &dnsmessage.AResource{A: ip.As4()}})
		} else {
			aaaa = append(aaaa, dnsmessage.Resource{Header: dnsmessage.ResourceHeader{Name: n, Type: dnsmessage.TypeAAAA, Class: dnsmessage.ClassINET, TTL: ttl},
				Body: &dnsmessage.AAAAResource{AAAA: ip.As16()}})
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[dnsKey{fqdn(name), dnsmessage.TypeA}] = a
	s.records[dnsKey{fqdn(name), dnsmessage.TypeAAAA}] = aaaa
}

// SetSRV sets name's SRV records to recs, with ttl seconds.
func (s *DNSServer) SetSRV(name string, ttl uint32, recs ...SRV) {
	n := dnsmessage.MustNewName(fqdn(name))
	var rrs []dnsmessage.Resource
	for _, r := range recs {
		rrs = append(rrs, dnsmessage.Resource{Header: dnsmessage.ResourceHeader{Name: n, Type: dnsmessage.TypeSRV, Class: dnsmessage.ClassINET, TTL: ttl},
			Body: &dnsmessage.SRVResource{Target: dnsmessage.MustNewName(fqdn(r.Target)), Port: r.Port, Priority: r.Priority, Weight: r.Weight}})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[dnsKey{fqdn(name), dnsmessage.TypeSRV}] = rrs
}

// Fail makes every answer carry rcode (dnsmessage.RCodeServerFailure,
// RCodeNameError…); RCodeSuccess answers from the records again.
func (s *DNSServer) Fail(rcode dnsmessage.RCode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rcode = rcode
}

// Silent makes the server answer nothing (true), as a server down, or
// answer again (false).
func (s *DNSServer) Silent(silent bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.silent = silent
}

// Queries returns how many queries for name's records of typ came.
func (s *DNSServer) Queries(name string, typ dnsmessage.Type) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries[dnsKey{fqdn(name), typ}]
}

// answer returns the answer to msg, nil for none; over UDP one that
// does not fit 512 bytes is truncated (TC set, no records), as RFC 1035
// has it, so that the client asks again over TCP.
func (s *DNSServer) answer(msg []byte, udp bool) []byte {
	var m dnsmessage.Message
	if err := m.Unpack(msg); err != nil || len(m.Questions) != 1 {
		return nil
	}
	q := m.Questions[0]
	k := dnsKey{strings.ToLower(q.Name.String()), q.Type}
	s.mu.Lock()
	s.queries[k]++
	silent, rcode := s.silent, s.rcode
	answers := s.records[k]
	var extra []dnsmessage.Resource
	for _, rr := range answers {
		if b, ok := rr.Body.(*dnsmessage.SRVResource); ok {
			target := strings.ToLower(b.Target.String())
			extra = append(extra, s.records[dnsKey{target, dnsmessage.TypeA}]...)
			extra = append(extra, s.records[dnsKey{target, dnsmessage.TypeAAAA}]...)
		}
	}
	s.mu.Unlock()
	if silent {
		return nil
	}
	r := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: m.Header.ID, Response: true, Authoritative: true, RecursionDesired: m.Header.RecursionDesired, RCode: rcode},
		Questions: m.Questions,
	}
	if rcode == dnsmessage.RCodeSuccess {
		r.Answers, r.Additionals = answers, extra
	}
	out, err := r.Pack()
	if err != nil {
		return nil
	}
	if udp && len(out) > 512 {
		r.Header.Truncated, r.Answers, r.Additionals = true, nil, nil
		out, _ = r.Pack()
	}
	return out
}
