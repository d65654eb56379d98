package upstream

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"math"
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

// pick returns the slot of the host of s for r, skipping those whose
// bit is set in tried, or -1 when every one is skipped; tried has the
// bits of the slots not pickable set (draining or free). client is the
// client's address, for ip_hash. Weights count as nginx counts them:
// round_robin gives each host its weight's share of the turns, spread
// out; least_conn and random_two compare requests in flight divided by
// weight (random_two drawing its two by weight); the hashes weigh
// rendezvous scores.
func pick[C Conn](b *Balancer, s *hostSet[C], tried uint64, r *engine.Request, client []byte) int {
	n := s.n
	avail := func(i int) bool { return tried&bit(i) == 0 }
	// lighter reports whether host i is less busy than host j, for its
	// weight: active_i/w_i < active_j/w_j.
	lighter := func(i, j int) bool {
		return s.slots[i].active.Load()*int64(s.weights[j]) < s.slots[j].active.Load()*int64(s.weights[i])
	}
	switch b.policy {
	case LeastConn:
		if n == 0 {
			return -1
		}
		best := -1
		start := int(b.next.Add(1) % uint64(n))
		for k := range n {
			i := (start + k) % n
			if avail(i) && (best < 0 || lighter(i, best)) {
				best = i
			}
		}
		return best
	case RandomTwo:
		var cand [MaxHosts]int
		var cum [MaxHosts]int64 // the weights summed up to cand[k]
		m := 0
		var total int64
		for i := range n {
			if avail(i) {
				total += int64(s.weights[i])
				cand[m], cum[m] = i, total
				m++
			}
		}
		switch m {
		case 0:
			return -1
		case 1:
			return cand[0]
		}
		x := drawn(cum[:m], rand.Int64N(total))
		// The second drawn among the others: by weight, as if x's weight
		// were cut out of the line.
		wx := cum[x]
		if x > 0 {
			wx -= cum[x-1]
		}
		v := rand.Int64N(total - wx)
		if x > 0 && v >= cum[x-1] || x == 0 {
			v += wx
		}
		y := drawn(cum[:m], v)
		i, j := cand[x], cand[y]
		if lighter(j, i) {
			return j
		}
		return i
	case IPHash:
		return rendezvous(b, s, tried, client)
	case Hash:
		return rendezvous(b, s, tried, b.key(r))
	}
	rr := s.rr
	if len(rr) == 0 {
		return -1
	}
	start := b.next.Add(1) - 1
	for k := range uint64(len(rr)) {
		if i := int(rr[(start+k)%uint64(len(rr))]); avail(i) {
			return i
		}
	}
	// Every host in the turns tried: none left (the turns hold each
	// pickable host).
	return -1
}

// drawn returns the k for which v falls in [cum[k-1], cum[k]).
func drawn(cum []int64, v int64) int {
	for k, c := range cum {
		if v < c {
			return k
		}
	}
	return len(cum) - 1
}

// rendezvous picks by highest random weight: the host whose hash with
// key scores highest among those not tried. A key keeps its host while
// that one is up, and only the keys of a host that goes away move. With
// weights, the score is w/-ln(u) for the hash u in (0,1): each host then
// gets its weight's share of the keys, and still only the keys of a host
// that goes (or whose weight changes) move.
func rendezvous[C Conn](b *Balancer, s *hostSet[C], tried uint64, key []byte) int {
	best := -1
	var bestScore uint64
	var bestW float64
	var h maphash.Hash
	h.SetSeed(b.seed)
	for i := range s.n {
		if tried&bit(i) != 0 {
			continue
		}
		h.Reset()
		h.Write(key)
		h.WriteString(s.slots[i].Name)
		sum := h.Sum64()
		if s.uniform {
			if best < 0 || sum > bestScore {
				best, bestScore = i, sum
			}
			continue
		}
		u := (float64(sum>>11) + 0.5) / (1 << 53)
		w := float64(s.weights[i]) / -math.Log(u)
		if best < 0 || w > bestW {
			best, bestW = i, w
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
