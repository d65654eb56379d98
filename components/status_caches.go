package components

import (
	"bytes"
	"fmt"
	"html"
	"strconv"
)

// CacheStatus is the counters of one cache (see cache.Cache.Stats), as
// the status page shows them. Name is the cache's name; the second and
// later caches of one name are shown as "NAME (2)", "NAME (3)"…, in the
// order the config built them.
type CacheStatus struct {
	Name        string `json:"name"`
	Hits        uint64 `json:"hits"`         // answered by a fresh stored response
	Misses      uint64 `json:"misses"`       // answered by the components after the cache
	Stale       uint64 `json:"stale"`        // answered by a stale stored response
	Collapsed   uint64 `json:"collapsed"`    // answered by another request's fetch
	Passes      uint64 `json:"passes"`       // methods the cache does not answer
	Revalidated uint64 `json:"revalidated"`  // 304s that freshened a stored response
	Stored      uint64 `json:"stored"`       // responses that entered the store
	Purged      uint64 `json:"purged"`       // stored responses removed by purges and bans
	Evictions   uint64 `json:"evictions"`    // entries the size budget pushed out
	Objects     uint64 `json:"objects"`      // responses stored now
	Bytes       int64  `json:"bytes"`        // bytes charged to the budget now
	BytesServed uint64 `json:"bytes_served"` // body bytes answered from the store
}

// cacheStatus returns the counters of the caches of s.
func cacheStatus(s *Caches) []CacheStatus {
	var out []CacheStatus
	seen := map[string]int{}
	for _, x := range s.All() {
		st := x.Stats()
		name := x.Name()
		seen[name]++
		if k := seen[name]; k > 1 {
			// A space and parentheses are in no cache name (an
			// sf-token), so "pages (2)" is never another cache's.
			name += " (" + strconv.Itoa(k) + ")"
		}
		out = append(out, CacheStatus{
			Name: name, Hits: st.Hits, Misses: st.Misses, Stale: st.Stale, Collapsed: st.Collapsed,
			Passes: st.Passes, Revalidated: st.Revalidated, Stored: st.Stored, Purged: st.Purged,
			Evictions: st.Evictions, Objects: st.Objects, Bytes: st.Bytes, BytesServed: st.BytesServed,
		})
	}
	return out
}

// cachesPrometheus writes the sluice_cache_* series, labelled
// cache="NAME".
func cachesPrometheus(b *bytes.Buffer, selfAnd string, cs []CacheStatus) {
	if len(cs) == 0 {
		return
	}
	series := []struct {
		name, typ, help string
		value           func(c *CacheStatus) any
	}{
		{"sluice_cache_hits_total", "counter", "Requests answered by a fresh stored response.", func(c *CacheStatus) any { return c.Hits }},
		{"sluice_cache_misses_total", "counter", "Requests answered by the components after the cache.", func(c *CacheStatus) any { return c.Misses }},
		{"sluice_cache_stale_total", "counter", "Requests answered by a stale stored response.", func(c *CacheStatus) any { return c.Stale }},
		{"sluice_cache_collapsed_total", "counter", "Requests answered by another request's fetch.", func(c *CacheStatus) any { return c.Collapsed }},
		{"sluice_cache_passes_total", "counter", "Requests with a method the cache does not answer.", func(c *CacheStatus) any { return c.Passes }},
		{"sluice_cache_revalidations_total", "counter", "Revalidations that freshened a stored response (304).", func(c *CacheStatus) any { return c.Revalidated }},
		{"sluice_cache_stores_total", "counter", "Responses that entered the store.", func(c *CacheStatus) any { return c.Stored }},
		{"sluice_cache_purged_total", "counter", "Stored responses removed by purges and bans.", func(c *CacheStatus) any { return c.Purged }},
		{"sluice_cache_evictions_total", "counter", "Entries the size budget pushed out.", func(c *CacheStatus) any { return c.Evictions }},
		{"sluice_cache_objects", "gauge", "Responses stored.", func(c *CacheStatus) any { return c.Objects }},
		{"sluice_cache_bytes", "gauge", "Bytes charged to the cache's size budget.", func(c *CacheStatus) any { return c.Bytes }},
		{"sluice_cache_served_bytes_total", "counter", "Body bytes answered from the store.", func(c *CacheStatus) any { return c.BytesServed }},
	}
	for _, s := range series {
		promMetric(b, s.name, s.typ, s.help)
		for i := range cs {
			fmt.Fprintf(b, "%s{%scache=%q} %v\n", s.name, selfAnd, cs[i].Name, s.value(&cs[i]))
		}
	}
}

// cachesHTML writes a table of the caches.
func cachesHTML(b *bytes.Buffer, cs []CacheStatus) {
	if len(cs) == 0 {
		return
	}
	b.WriteString("<h2>Caches</h2>\n<table>\n<tr><th>Cache</th><th>Hits</th><th>Misses</th><th>Stale</th><th>Collapsed</th><th>Passes</th>" +
		"<th>Revalidated</th><th>Stored</th><th>Purged</th><th>Evictions</th><th>Objects</th><th>Bytes</th><th>Bytes served</th></tr>\n")
	for _, c := range cs {
		fmt.Fprintf(b, "<tr><th>%s</th><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td></tr>\n",
			html.EscapeString(c.Name), c.Hits, c.Misses, c.Stale, c.Collapsed, c.Passes, c.Revalidated, c.Stored, c.Purged,
			c.Evictions, c.Objects, c.Bytes, c.BytesServed)
	}
	b.WriteString("</table>\n")
}
