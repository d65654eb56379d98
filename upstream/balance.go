package upstream

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"strings"
	"sync/atomic"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
)

// The balancing policies.
const (
	RoundRobin = "round_robin" // each upstream in turn
	LeastConn  = "least_conn"  // the one with the fewest requests in flight
	RandomTwo  = "random_two"  // of two chosen at random, the less busy
	IPHash     = "ip_hash"     // by the client's address
	Hash       = "hash"        // by a header, a cookie or the path (HashKey)
)

// Balancer picks a host for a request among those not yet tried, by its
// policy. It is safe for concurrent use.
type Balancer struct {
	policy  string
	keyKind string // for Hash: "header", "cookie" or "path"
	keyName string
	next    atomic.Uint64
	seed    maphash.Seed
}

// NewBalancer returns the Balancer of policy (RoundRobin when empty), or
// an error naming what is wrong; key is policy Hash's "header:NAME",
// "cookie:NAME" or "path", and must be empty for the others.
func NewBalancer(policy, key string) (*Balancer, error) {
	b := &Balancer{policy: policy, seed: maphash.MakeSeed()}
	switch policy {
	case "":
		b.policy = RoundRobin
	case RoundRobin, LeastConn, RandomTwo, IPHash:
		if key != "" {
			return nil, fmt.Errorf("hash_key is for policy hash, not %s", policy)
		}
	case Hash:
		kind, name, _ := strings.Cut(key, ":")
		switch {
		case kind == "path" && name == "":
		case (kind == "header" || kind == "cookie") && httpgrammar.IsToken(name):
		default:
			return nil, fmt.Errorf("hash_key %q: want header:NAME, cookie:NAME or path", key)
		}
		b.keyKind, b.keyName = kind, name
	default:
		return nil, fmt.Errorf("policy %q: want %s, %s, %s, %s or %s", policy, RoundRobin, LeastConn, RandomTwo, IPHash, Hash)
	}
	return b, nil
}

// Policy returns b's policy: RoundRobin, LeastConn, RandomTwo, IPHash or
// Hash.
func (b *Balancer) Policy() string { return b.policy }

// pick returns the index of the upstream for r among ups, skipping those
// whose bit is set in tried, or -1 when every one was tried. client is
// the client's address, for ip_hash.
func pick[C Conn](b *Balancer, ups []*Host[C], tried uint64, r *engine.Request, client []byte) int {
	n := len(ups)
	avail := func(i int) bool { return tried&(1<<i) == 0 }
	switch b.policy {
	case LeastConn:
		best := -1
		start := int(b.next.Add(1) % uint64(n))
		for k := range n {
			i := (start + k) % n
			if avail(i) && (best < 0 || ups[i].active.Load() < ups[best].active.Load()) {
				best = i
			}
		}
		return best
	case RandomTwo:
		var cand [64]int
		m := 0
		for i := range n {
			if avail(i) {
				cand[m] = i
				m++
			}
		}
		switch m {
		case 0:
			return -1
		case 1:
			return cand[0]
		}
		x := rand.IntN(m)
		y := rand.IntN(m - 1)
		if y >= x {
			y++
		}
		i, j := cand[x], cand[y]
		if ups[j].active.Load() < ups[i].active.Load() {
			return j
		}
		return i
	case IPHash:
		return rendezvous(b, ups, tried, client)
	case Hash:
		return rendezvous(b, ups, tried, b.key(r))
	}
	start := b.next.Add(1) - 1
	for k := range n {
		if i := int((start + uint64(k)) % uint64(n)); avail(i) {
			return i
		}
	}
	return -1
}

// rendezvous picks by highest random weight: the upstream whose hash with
// key is highest among those not tried. A key keeps its upstream while
// that one is up, and only the keys of an upstream that goes away move.
func rendezvous[C Conn](b *Balancer, ups []*Host[C], tried uint64, key []byte) int {
	best, bestScore := -1, uint64(0)
	var h maphash.Hash
	h.SetSeed(b.seed)
	for i, u := range ups {
		if tried&(1<<i) != 0 {
			continue
		}
		h.Reset()
		h.Write(key)
		h.WriteString(u.Name)
		if s := h.Sum64(); best < 0 || s > bestScore {
			best, bestScore = i, s
		}
	}
	return best
}

// key returns what policy hash hashes for r.
func (b *Balancer) key(r *engine.Request) []byte {
	switch b.keyKind {
	case "path":
		return r.Path
	case "header":
		return r.Header(b.keyName)
	}
	for i := range r.Fields {
		if !httpgrammar.EqualFold(r.Fields[i].Name, "cookie") {
			continue
		}
		v := r.Fields[i].Value
		for len(v) > 0 {
			var pair []byte
			if j := bytes.IndexByte(v, ';'); j >= 0 {
				pair, v = v[:j], v[j+1:]
			} else {
				pair, v = v, nil
			}
			pair = httpgrammar.TrimOWS(pair)
			if eq := bytes.IndexByte(pair, '='); eq >= 0 && string(pair[:eq]) == b.keyName {
				return pair[eq+1:]
			}
		}
	}
	return nil
}
