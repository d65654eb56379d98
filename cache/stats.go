package cache

import (
	"sync/atomic"

	"github.com/sluice-server/sluice/pipe"
)

// StatusKey is the key of the per-request value (pipe.Conn.Value) in
// which a Cache records what it did with a request, for an access log
// placed before it: one of StatusHit, StatusStale, StatusRevalidated,
// StatusCollapsed, StatusMiss and StatusPass. A request that no cache
// saw has no value ("").
const StatusKey = "cache.status"

// The values of StatusKey.
const (
	// StatusHit: a fresh stored response answered.
	StatusHit = "HIT"
	// StatusStale: a stale stored response answered, as the request
	// (max-stale) or the response (stale-while-revalidate,
	// stale-if-error) or the stale_if_error grace allowed.
	StatusStale = "STALE"
	// StatusRevalidated: a stored response answered after the rest of
	// the pipeline confirmed it with a 304.
	StatusRevalidated = "REVALIDATED"
	// StatusCollapsed: the response another request was fetching
	// answered, read as it streamed in.
	StatusCollapsed = "COLLAPSED"
	// StatusMiss: the rest of the pipeline answered (stored or not), or
	// nothing did (a 504 to only-if-cached, a 502 when a revalidation
	// got no response).
	StatusMiss = "MISS"
	// StatusPass: a method the cache does not answer (POST, PUT,
	// OPTIONS…) went on to the rest of the pipeline.
	StatusPass = "PASS"
)

// outcome is what the cache did with one request: a counter and a
// StatusKey value.
type outcome uint8

const (
	outHit outcome = iota
	outStale
	outRevalidated
	outCollapsed
	outMiss
	outPass
)

var outcomeNames = [...]string{StatusHit, StatusStale, StatusRevalidated, StatusCollapsed, StatusMiss, StatusPass}

// count records the outcome of the request c: its counter (a request
// revalidated counts in Revalidated once per revalidation, when the 304
// arrives, not here) and its StatusKey value.
func (x *Cache) count(c *pipe.Conn, o outcome) {
	var n *uint64
	switch o {
	case outHit:
		n = &x.stats.Hits
	case outStale:
		n = &x.stats.Stale
	case outCollapsed:
		n = &x.stats.Collapsed
	case outMiss:
		n = &x.stats.Misses
	case outPass:
		n = &x.stats.Passes
	}
	if n != nil {
		atomic.AddUint64(n, 1)
	}
	c.SetValue(StatusKey, outcomeNames[o])
}

// Stats returns the counters so far, each read atomically (the set is
// not one atomic view):
//
//   - Hits: requests answered by a fresh stored response;
//   - Stale: requests answered by a stale one (max-stale,
//     stale-while-revalidate, stale-if-error, the grace);
//   - Misses: requests the rest of the pipeline answered (a stale
//     response that got a new one from it included), and the 504s to
//     only-if-cached;
//   - Collapsed: requests answered by another request's fetch;
//   - Passes: requests whose method the cache does not answer;
//   - Revalidated: 304s that freshened a stored response, one per
//     revalidation (background ones included, however many requests
//     waited on it);
//   - Stored: responses that entered the store;
//   - BytesServed: body bytes of complete answers from the store (hits,
//     stale, revalidated and collapsed answers);
//   - Purged: stored responses removed by PurgeURL, PurgeTag and
//     BanPrefix;
//   - Evictions: entries the size budget pushed out;
//   - Objects: responses stored now (Vary variants each count);
//   - Bytes: the bytes charged to the size budget now.
func (x *Cache) Stats() Stats {
	if x.disk != nil {
		return x.diskStats()
	}
	return Stats{
		Hits: atomic.LoadUint64(&x.stats.Hits), Misses: atomic.LoadUint64(&x.stats.Misses),
		Stale: atomic.LoadUint64(&x.stats.Stale), Revalidated: atomic.LoadUint64(&x.stats.Revalidated),
		Passes: atomic.LoadUint64(&x.stats.Passes), Collapsed: atomic.LoadUint64(&x.stats.Collapsed),
		Stored:      atomic.LoadUint64(&x.stats.Stored),
		BytesServed: atomic.LoadUint64(&x.stats.BytesServed), Purged: atomic.LoadUint64(&x.stats.Purged),
		Evictions: x.store.Evictions(), Objects: uint64(max(0, x.objects.Load())), Bytes: x.store.Size(),
	}
}

// Name returns the cache's name (Options.Name, or "Sluice").
func (x *Cache) Name() string { return x.name }

// counted returns send, which answers from the store, adding the bytes
// it sent (size, asked once it is done) to BytesServed when it succeeds;
// a response the rest of the pipeline just produced (StatusMiss) is not
// counted.
func (x *Cache) counted(c *pipe.Conn, send pipe.Content, size func() int64) pipe.Content {
	if c.Value(StatusKey) == StatusMiss {
		return send
	}
	return func(w pipe.Writer) error {
		err := send(w)
		if err == nil {
			atomic.AddUint64(&x.stats.BytesServed, uint64(max(0, size())))
		}
		return err
	}
}

// add puts the complete response entry e (its key set) into the store
// with its tags indexed, and reports whether the budget took it.
func (x *Cache) add(e *entry, m *meta, charge int64) bool {
	if e.purged.Load() {
		return false
	}
	if tags := responseTags(m); tags != nil {
		// Indexed first: once in the store, e may be evicted (and
		// unindexed) at any moment. The index's memory is the entry's
		// to count: each tag's bytes, in both maps.
		x.tags.add(e, tags)
		for _, t := range tags {
			charge += tagCharge + int64(len(t))
		}
	}
	// The store holds the body from before it enters (it may be evicted
	// at once) until it leaves (dropped).
	e.body.ref()
	if !x.store.Set(e.key, e, charge) {
		x.tags.remove(e)
		e.body.unref()
		return false
	}
	x.objects.Add(1)
	if e.purged.Load() {
		// A purge marked e while it was being stored: the purge's walk
		// of the store may have run before e entered it.
		if cur, ok := x.store.Get(e.key); ok && cur == e {
			x.remove(e.key)
		}
		return false
	}
	return true
}

// evicted is the store's onEvict: an entry the budget pushed out, or one
// replaced under its key.
func (x *Cache) evicted(_ string, e *entry) { x.dropped(e) }

// dropped accounts for the entry e leaving the store.
func (x *Cache) dropped(e *entry) {
	if e.kind != kindResponse {
		return
	}
	x.objects.Add(-1)
	x.tags.remove(e)
	if e.body != nil {
		e.body.unref()
	}
}

// remove deletes the store entry under key and reports whether it was a
// response.
func (x *Cache) remove(key string) bool {
	e, ok := x.store.Delete(key)
	if !ok {
		return false
	}
	x.dropped(e)
	return e.kind == kindResponse
}
