package tracing

import (
	"regexp"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
)

var traceparentRE = regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$`)

// FuzzStage sends any traceparent and tracestate through the stage:
// whatever the caller wrote, the request leaves with exactly one
// well-formed traceparent of a span of ours (in the caller's trace only
// when it sent a valid one), and at most one tracestate, of visible ASCII
// only, as the W3C rules allow it.
func FuzzStage(f *testing.F) {
	for _, s := range [][2]string{
		{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "congo=t61rcWkgMzE"},
		{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00", ""},
		{"00-00000000000000000000000000000000-b7ad6b7169203331-01", "a=1,b=2"},
		{"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "x"},
		{"01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra", "k@v=1"},
		{"junk", "=,=,,"},
	} {
		f.Add(s[0], s[1])
	}
	tr := testTracer(f, 1, nopExporter{})
	var got []engine.Field
	h := pipe.Handler(pipe.Chain{tr.Stage(), pipe.Pipe(func(c *pipe.Conn) bool {
		got = append(got[:0], c.Request.Fields...)
		return true
	})})
	f.Fuzz(func(t *testing.T, parent, state string) {
		req := newReq()
		req.Fields = append(req.Fields,
			engine.Field{Name: []byte("traceparent"), Value: []byte(parent)},
			engine.Field{Name: []byte("tracestate"), Value: []byte(state)})
		h.Serve(&discard{}, req)
		var tps, tss []string
		for _, fl := range got {
			switch string(fl.Name) {
			case "traceparent":
				tps = append(tps, string(fl.Value))
			case "tracestate":
				tss = append(tss, string(fl.Value))
			}
		}
		if len(tps) != 1 || !traceparentRE.MatchString(tps[0]) || tps[0] == parent {
			t.Fatalf("traceparent %q sent on for %q", tps, parent)
		}
		if len(tss) > 1 {
			t.Fatalf("tracestate %q", tss)
		}
		for _, ts := range tss {
			for i := 0; i < len(ts); i++ {
				if ts[i] < 0x20 || ts[i] > 0x7e {
					t.Fatalf("tracestate %q passed on with byte %#x", ts, ts[i])
				}
			}
		}
	})
}
