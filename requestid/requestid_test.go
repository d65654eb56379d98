package requestid

import (
	"strings"
	"testing"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// echoFields answers with the request's ID as the Conn holds it and every
// value of the header the ID goes in, as the request now carries them: what
// a proxy, CGI or FastCGI behind the stage would pass on.
func echoFields(name string) pipe.Component {
	return pipe.Source(func(c *pipe.Conn) pipe.Content {
		var b strings.Builder
		b.WriteString("id=" + string(c.RequestID()) + "\n")
		for _, f := range c.Request.Fields {
			if strings.EqualFold(string(f.Name), name) {
				b.WriteString("field=" + string(f.Value) + "\n")
			}
		}
		body := b.String()
		return func(w pipe.Writer) error { _, err := w.Write([]byte(body)); return err }
	})
}

func TestStage(t *testing.T) {
	const made = "made" // stands for an ID the stage made
	for _, tt := range []struct {
		name    string
		opts    Options
		fields  string // sent after Host
		want    string // the ID, or made
		echoed  bool
		fieldID string // header the ID is in; "" is DefaultHeader
	}{
		{name: "none sent", opts: Options{}, want: made},
		{name: "untrusted client's replaced", opts: Options{}, fields: "X-Request-Id: abc\r\n", want: made},
		{name: "not trusted: another peer", opts: Options{TrustedProxies: []string{"10.0.0.0/8"}}, fields: "X-Request-Id: abc\r\n", want: made},
		{name: "trusted proxy's kept", opts: Options{TrustedProxies: []string{"127.0.0.1"}}, fields: "X-Request-Id: 1b4e28ba-2fa1-11d2-883f-0016d3cca427\r\n", want: "1b4e28ba-2fa1-11d2-883f-0016d3cca427"},
		{name: "trusted, case-insensitive name", opts: Options{TrustedProxies: []string{"127.0.0.0/8"}}, fields: "x-request-id: Root=1-67891233-abcdef012345678912345678\r\n", want: "Root=1-67891233-abcdef012345678912345678"},
		{name: "trusted, but unsafe bytes", opts: Options{TrustedProxies: []string{"127.0.0.1"}}, fields: "X-Request-Id: <script>\r\n", want: made},
		{name: "trusted, but a space", opts: Options{TrustedProxies: []string{"127.0.0.1"}}, fields: "X-Request-Id: a b\r\n", want: made},
		{name: "trusted, but too long", opts: Options{TrustedProxies: []string{"127.0.0.1"}}, fields: "X-Request-Id: " + strings.Repeat("a", MaxLen+1) + "\r\n", want: made},
		{name: "trusted, at the bound", opts: Options{TrustedProxies: []string{"127.0.0.1"}}, fields: "X-Request-Id: " + strings.Repeat("a", MaxLen) + "\r\n", want: strings.Repeat("a", MaxLen)},
		{name: "trusted, but sent twice", opts: Options{TrustedProxies: []string{"127.0.0.1"}}, fields: "X-Request-Id: a\r\nX-Request-Id: b\r\n", want: made},
		{name: "own header", opts: Options{Header: "Request-Id", TrustedProxies: []string{"127.0.0.1"}}, fields: "Request-Id: xyz\r\nX-Request-Id: other\r\n", want: "xyz", fieldID: "Request-Id"},
		{name: "echoed", opts: Options{Response: true}, want: made, echoed: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			name := tt.fieldID
			if name == "" {
				name = DefaultHeader
			}
			srv := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{s, echoFields(name)}))
			resp, body := sluicetest.RoundTrip(t, srv.Addr, "GET / HTTP/1.1\r\nHost: a\r\n"+tt.fields+"\r\n")
			lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
			if len(lines) != 2 || !strings.HasPrefix(lines[0], "id=") || !strings.HasPrefix(lines[1], "field=") {
				t.Fatalf("want the ID and one field, got %q", body)
			}
			id, field := lines[0][3:], lines[1][6:]
			if id != field {
				t.Errorf("the request carries %q, the Conn %q", field, id)
			}
			if tt.want == made {
				if len(id) != Len || strings.Trim(id, hexDigits) != "" || strings.Contains(tt.fields, id) {
					t.Errorf("ID %q: want %d new hexadecimal digits", id, Len)
				}
			} else if id != tt.want {
				t.Errorf("ID %q, want %q", id, tt.want)
			}
			if got := resp.Header.Get(name); tt.echoed && got != id || !tt.echoed && got != "" {
				t.Errorf("response's %s %q (echoed %v), ID %q", name, got, tt.echoed, id)
			}
		})
	}
}

// Two requests get two IDs.
func TestMadeIDsDiffer(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := string(Append(nil))
		if len(id) != Len || seen[id] {
			t.Fatalf("ID %q: repeated or of the wrong length", id)
		}
		seen[id] = true
	}
}

func TestNewRefuses(t *testing.T) {
	for _, tt := range []struct {
		opts Options
		want string
	}{
		{Options{Header: "X Request"}, "not a header name"},
		{Options{Header: "Connection"}, "not a field an ID can go in"},
		{Options{Header: "content-length"}, "not a field an ID can go in"},
		{Options{TrustedProxies: []string{"10.0.0.300"}}, "trusted_proxies"},
	} {
		if _, err := New(tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want an error saying %q", tt.opts, err, tt.want)
		}
	}
}

// FuzzValid checks Valid against its definition, and that whatever it
// accepts a Conn holds and a header carries unescaped.
func FuzzValid(f *testing.F) {
	for _, s := range []string{"", "abc", "1b4e28ba-2fa1-11d2-883f-0016d3cca427", "a b", "a\x00", "<x>", "\"q\"", "a,b", strings.Repeat("z", MaxLen+1), "Zm9v+/==", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := len(s) > 0 && len(s) <= MaxLen
		for i := 0; i < len(s); i++ {
			c := s[i]
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || strings.IndexByte("-._~+/=:@", c) >= 0) {
				want = false
			}
		}
		if got := Valid([]byte(s)); got != want {
			t.Fatalf("Valid(%q) = %v, want %v", s, got, want)
		}
		if want {
			var c pipe.Conn
			if !c.SetRequestID([]byte(s)) || string(c.RequestID()) != s {
				t.Fatalf("a Conn refuses the valid ID %q", s)
			}
		}
	})
}
