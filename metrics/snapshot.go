package metrics

// Snapshot is one process's metrics at one moment, as Take reads them:
// what WriteText writes, and what a worker sends its master (it encodes
// to JSON).
type Snapshot struct {
	// Worker is the id of the worker process the snapshot is of, 0 for
	// a server without workers: WriteText then labels its series
	// worker="ID".
	Worker int             `json:"worker,omitempty"`
	Routes []RouteSnapshot `json:"routes,omitempty"`
	// Upstreams are the counters of the upstream hosts the transports
	// (proxy, fastcgi) of the process have tried.
	Upstreams []UpstreamSnapshot `json:"upstreams,omitempty"`
	// Sets are the upstream sets of the config and their hosts' health
	// and pools.
	Sets    []SetSnapshot `json:"sets,omitempty"`
	Runtime Runtime       `json:"runtime"`
	Process Process       `json:"process"`
}

// Take reads the routes and upstreams of g (nil: none), the upstream
// sets registered in the process (upstream.Sets), the runtime and the
// process now. It allocates; it is for a scrape, not for a request.
func Take(g *Registry) Snapshot {
	var s Snapshot
	if g != nil {
		for _, r := range g.routes() {
			s.Routes = append(s.Routes, r.Snapshot())
		}
		for _, u := range g.upstreams() {
			s.Upstreams = append(s.Upstreams, u.Snapshot())
		}
	}
	s.Sets = readSets()
	s.Runtime, s.Process = readRuntime(), readProcess()
	return s
}
