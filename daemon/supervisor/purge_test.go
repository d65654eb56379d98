//go:build linux

package supervisor

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/components"
)

// A purge too large for one control packet is relayed in parts that
// each fit, and together hold every item in order.
func TestSplitPurge(t *testing.T) {
	long := strings.Repeat("x", 3000)
	tests := []struct {
		name  string
		p     components.Purge
		parts int // at least
	}{
		{name: "small", p: components.Purge{Host: "h", URLs: []string{"/a"}, Tags: []string{"t"}}, parts: 1},
		{name: "many urls", p: components.Purge{Host: "h", URLs: seq("/u", 10000)}, parts: 2},
		{name: "every list", p: components.Purge{Cache: "c", Host: "h", URLs: seq("/u", 3000), Prefixes: seq("/p", 3000), Tags: seq("t", 3000)}, parts: 2},
		{name: "long and escaped", p: components.Purge{Host: "h", URLs: seq("/\"<"+long, 100)}, parts: 2},
		{name: "largest items", p: components.Purge{Host: "h", URLs: seq(strings.Repeat("\x01", components.MaxPurgeItem-5), 5)}, parts: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := splitPurge(tt.p)
			if len(parts) < tt.parts {
				t.Errorf("%d parts, want at least %d", len(parts), tt.parts)
			}
			var urls, prefixes, tags []string
			for i, p := range parts {
				b, err := json.Marshal(message{Type: msgPurge, ID: 1 << 60, Purge: &p})
				if err != nil || len(b) > maxMessage {
					t.Fatalf("part %d: %d bytes (%v), over the packet's %d", i, len(b), err, maxMessage)
				}
				if p.Cache != tt.p.Cache || p.Host != tt.p.Host {
					t.Errorf("part %d: cache %q host %q", i, p.Cache, p.Host)
				}
				urls, prefixes, tags = append(urls, p.URLs...), append(prefixes, p.Prefixes...), append(tags, p.Tags...)
			}
			if !slices.Equal(urls, tt.p.URLs) || !slices.Equal(prefixes, tt.p.Prefixes) || !slices.Equal(tags, tt.p.Tags) {
				t.Error("the parts do not hold the purge's items in order")
			}
		})
	}
}

func seq(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}
