package requestid

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/sluice-server/sluice/clientaddr"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
)

// DefaultHeader is the header field the ID is read from and written to
// when Options.Header is empty.
const DefaultHeader = "X-Request-Id"

// Len is the length of an ID Append makes: 128 random bits in
// hexadecimal.
const Len = 32

// MaxLen is the longest received ID Valid accepts.
const MaxLen = pipe.MaxRequestIDLen

// Options configures New. The zero value makes every request an ID under
// X-Request-Id, believes no received one, and sends none back.
type Options struct {
	// Header is the header field that carries the ID, from trusted
	// proxies and on to upstreams and programs; "" is DefaultHeader.
	Header string `yaml:"header"`

	// TrustedProxies lists the peers (CIDRs, addresses, "unix:") whose
	// received ID is kept; from any other peer it is replaced. Empty: no
	// received ID is kept.
	TrustedProxies []string `yaml:"trusted_proxies"`

	// Response sends the ID back to the client in the response, under
	// Header.
	Response bool `yaml:"response"`
}

// Keys are the option keys of Options, as a config file writes them.
var Keys = []string{"header", "trusted_proxies", "response"}

// Stage is the pipe.Component that gives a request its ID (see the
// package comment). It is immutable and safe for concurrent use.
type Stage struct {
	opts     Options
	name     []byte
	nameStr  string
	trust    *clientaddr.Resolver // nil: trust nobody
	response bool
}

// New returns the Stage for o. It fails for a header name that is not a
// token, and for a trusted proxy that is not an address, a CIDR or
// "unix:".
func New(o Options) (*Stage, error) {
	name := o.Header
	if name == "" {
		name = DefaultHeader
	}
	if !httpgrammar.IsToken([]byte(name)) {
		return nil, fmt.Errorf("header: %q is not a header name: want a token such as %s", name, DefaultHeader)
	}
	if httpgrammar.IsHopByHop([]byte(name)) || isFramingOrHost(name) {
		return nil, fmt.Errorf("header: %s is not a field an ID can go in: want one such as %s", name, DefaultHeader)
	}
	o.Header = name
	o.TrustedProxies = slices.Clone(o.TrustedProxies)
	s := &Stage{opts: o, name: []byte(name), nameStr: name, response: o.Response}
	if len(o.TrustedProxies) > 0 {
		r, err := clientaddr.New(o.TrustedProxies, "")
		if err != nil {
			return nil, err
		}
		s.trust = r
	}
	return s, nil
}

func isFramingOrHost(name string) bool {
	switch strings.ToLower(name) {
	case "host", "content-length", "transfer-encoding", "expect", "content-type":
		return true
	}
	return false
}

// Header returns the name of the header field that carries the ID.
func (s *Stage) Header() string { return s.nameStr }

// Options returns the options the Stage was made with, Header filled in.
// The caller must not modify its slice.
func (s *Stage) Options() Options { return s.opts }

// Handle implements pipe.Component: it chooses the request's ID, records
// it on c, puts it in the request's header under the stage's name (any
// other value of that field removed), and, with Response, in the
// response's. It never stops the pipeline, and allocates nothing for a
// request whose fields fit their slice.
func (s *Stage) Handle(c *pipe.Conn) bool {
	r := c.Request
	n, at := 0, -1
	for i := range r.Fields {
		if httpgrammar.EqualFold(r.Fields[i].Name, s.nameStr) {
			n, at = n+1, i
		}
	}
	kept := false
	if n == 1 && s.trust != nil && Valid(r.Fields[at].Value) && s.trust.TrustsPeer(r) {
		kept = c.SetRequestID(r.Fields[at].Value)
	}
	if !kept {
		var buf [Len]byte
		c.SetRequestID(Append(buf[:0]))
		if n > 0 {
			r.Fields = dropField(r.Fields, s.nameStr)
		}
		r.AddField(s.name, c.RequestID())
	}
	if s.response {
		c.Header().Set(s.nameStr, string(c.RequestID()))
	}
	return true
}

// dropField removes every field named name from fields, in place.
func dropField(fields []engine.Field, name string) []engine.Field {
	out := fields[:0]
	for _, f := range fields {
		if !httpgrammar.EqualFold(f.Name, name) {
			out = append(out, f)
		}
	}
	clear(fields[len(out):])
	return out
}

const hexDigits = "0123456789abcdef"

// Append appends a new ID to dst: Len lowercase hexadecimal digits, 128
// bits from the runtime's per-thread random generator (ChaCha8, seeded
// from the system's entropy), which takes no lock. It allocates nothing
// when dst has room. Safe for concurrent use.
func Append(dst []byte) []byte {
	dst = slices.Grow(dst, Len)
	n := len(dst)
	dst = dst[:n+Len]
	id := (*[Len]byte)(dst[n:])
	a, b := rand.Uint64(), rand.Uint64()
	for i := range 8 {
		x, y := 2*(a>>(8*i)&0xff), 2*(b>>(8*i)&0xff)
		id[2*i], id[2*i+1] = hexPairs[x], hexPairs[x+1]
		id[16+2*i], id[16+2*i+1] = hexPairs[y], hexPairs[y+1]
	}
	return dst
}

// hexPairs is every byte's two hexadecimal digits, "000102…ff": Append
// writes a byte's pair from it rather than a digit at a time.
var hexPairs = func() (t [512]byte) {
	for i := range 256 {
		t[2*i], t[2*i+1] = hexDigits[i>>4], hexDigits[i&15]
	}
	return t
}()

// Valid reports whether b may be kept as a request ID: 1 to MaxLen bytes,
// each a letter, a digit or one of "-._~+/=:@" (UUIDs, hexadecimal and
// base64 IDs, and the IDs of the common load balancers pass; spaces,
// quotes, commas, semicolons, angle brackets and control bytes do not).
func Valid(b []byte) bool {
	if len(b) == 0 || len(b) > MaxLen {
		return false
	}
	for _, c := range b {
		if !idByte[c] {
			return false
		}
	}
	return true
}

var idByte = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "-._~+/=:@" {
		t[c] = true
	}
	return t
}()
