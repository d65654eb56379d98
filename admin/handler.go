package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
)

// Bounds of a request body: a whole config, or a change or a purge.
const (
	maxConfigBody = 8 << 20
	maxChangeBody = 1 << 20
)

// errorBody is the JSON of an error answer.
type errorBody struct {
	Error  string       `json:"error"`
	Errors []errorEntry `json:"errors,omitempty"`
}

// errorEntry is one config error of an error answer.
type errorEntry struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Message string `json:"message"`
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"cannot encode the answer"}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// fail answers an error.
func fail(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, errorBody{Error: fmt.Sprintf(format, args...)})
}

// handler routes the API's requests, each already authenticated (see
// Server.auth), which put the caller in the request's context.
func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /config", s.getConfig)
	mux.HandleFunc("POST /load", s.load)
	mux.HandleFunc("GET /upstreams", s.getUpstreams)
	mux.HandleFunc("GET /upstreams/{name}", s.getUpstream)
	mux.HandleFunc("PUT /upstreams/{name}", s.changeUpstream)
	mux.HandleFunc("PATCH /upstreams/{name}", s.changeUpstream)
	mux.HandleFunc("POST /purge", s.purge)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusNotFound, "no such endpoint: see GET /config, POST /load, GET /upstreams, PUT and PATCH /upstreams/NAME, POST /purge")
	})
	return s.auth(methodNotAllowedJSON(mux))
}

// methodNotAllowedJSON turns the mux's plain-text 405 into JSON.
func methodNotAllowedJSON(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" || pattern == "/" {
			if allow := allowed(mux, r); allow != "" {
				w.Header().Set("Allow", allow)
				fail(w, http.StatusMethodNotAllowed, "%s does not take %s: use %s", r.URL.Path, r.Method, allow)
				return
			}
		}
		mux.ServeHTTP(w, r)
	})
}

// allowed lists the methods the mux serves r's path with.
func allowed(mux *http.ServeMux, r *http.Request) string {
	var out []string
	for _, m := range []string{"GET", "POST", "PUT", "PATCH"} {
		r2 := r.Clone(r.Context())
		r2.Method = m
		if _, p := mux.Handler(r2); p != "" && p != "/" {
			out = append(out, m)
		}
	}
	return strings.Join(out, ", ")
}

// configAnswer is GET /config's answer.
type configAnswer struct {
	File string `json:"file"`
	// YAML is the text the running config was loaded from.
	YAML string `json:"yaml"`
}

func (s *Server) getConfig(w http.ResponseWriter, r *http.Request) {
	name, data := s.Backend.Running()
	if accepts(r, "application/yaml") {
		w.Header().Set("Content-Type", "application/yaml")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(data)
		return
	}
	writeJSON(w, http.StatusOK, configAnswer{File: name, YAML: string(data)})
}

// accepts reports whether r's Accept field names typ.
func accepts(r *http.Request, typ string) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, t := range strings.Split(v, ",") {
			t, _, _ = strings.Cut(t, ";")
			if strings.EqualFold(strings.TrimSpace(t), typ) {
				return true
			}
		}
	}
	return false
}

// readBody reads r's body up to limit, answering the error itself.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		fail(w, http.StatusBadRequest, "cannot read the body: %v", err)
		return nil, false
	}
	if int64(len(b)) > limit {
		fail(w, http.StatusRequestEntityTooLarge, "the body is over %d bytes", limit)
		return nil, false
	}
	return b, true
}

func (s *Server) load(w http.ResponseWriter, r *http.Request) {
	data, ok := readBody(w, r, maxConfigBody)
	if !ok {
		return
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		fail(w, http.StatusBadRequest, "the body is empty: POST the whole config file, YAML or JSON")
		return
	}
	by := caller(r)
	s.mu.Lock() // one load at a time, with its state saved in order
	defer s.mu.Unlock()
	err := s.Backend.Load(data)
	var errs config.Errors
	switch {
	case errors.As(err, &errs):
		body := errorBody{Error: fmt.Sprintf("the config is not valid (%d errors); the running config keeps serving", len(errs))}
		for _, e := range errs {
			body.Errors = append(body.Errors, errorEntry{File: e.File, Line: e.Line, Col: e.Col, Message: e.Msg})
		}
		s.log().Warn("admin: config rejected", "by", by, "errors", len(errs))
		writeJSON(w, http.StatusBadRequest, body)
		return
	case err != nil:
		s.log().Error("admin: config not applied", "by", by, "error", err)
		fail(w, http.StatusUnprocessableEntity, "the config cannot be served: %v; the running config keeps serving", err)
		return
	}
	s.log().Info("admin: config loaded", "by", by, "bytes", len(data))
	s.Serving(data) // a new config's sets are its own
	writeJSON(w, http.StatusOK, map[string]any{"loaded": true})
}

func (s *Server) getUpstreams(w http.ResponseWriter, r *http.Request) {
	sets, err := s.Backend.Upstreams()
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"sets": sets})
}

func (s *Server) getUpstream(w http.ResponseWriter, r *http.Request) {
	sets, err := s.Backend.Upstreams()
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "%v", err)
		return
	}
	name := r.PathValue("name")
	for _, set := range sets {
		if set.Name == name {
			writeJSON(w, http.StatusOK, set)
			return
		}
	}
	fail(w, http.StatusNotFound, "no upstream set %q: GET /upstreams lists them", name)
}

// changeBody is PUT's and PATCH's JSON.
type changeBody struct {
	Hosts  []HostSpec `json:"hosts"`
	Add    []HostSpec `json:"add"`
	Remove []string   `json:"remove"`
}

func (s *Server) changeUpstream(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r, maxChangeBody)
	if !ok {
		return
	}
	var b changeBody
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		fail(w, http.StatusBadRequest, "want a JSON object: %v", err)
		return
	}
	c := Change{By: caller(r), Replace: r.Method == http.MethodPut, Hosts: b.Hosts, Add: b.Add, Remove: b.Remove}
	switch {
	case c.Replace && (b.Add != nil || b.Remove != nil):
		fail(w, http.StatusBadRequest, `PUT replaces the hosts: {"hosts": [...]}; add and remove are PATCH's`)
		return
	case c.Replace && len(b.Hosts) == 0:
		fail(w, http.StatusBadRequest, `PUT needs the set's hosts, at least one: {"hosts": [{"name": "http://10.0.0.7:8080"}]}`)
		return
	case !c.Replace && b.Hosts != nil:
		fail(w, http.StatusBadRequest, `PATCH changes some hosts: {"add": [...], "remove": [...]}; hosts is PUT's`)
		return
	case !c.Replace && len(b.Add)+len(b.Remove) == 0:
		fail(w, http.StatusBadRequest, `PATCH needs add or remove: {"add": [{"name": "http://10.0.0.7:8080", "weight": 2}], "remove": ["http://10.0.0.6:8080"]}`)
		return
	}
	name := r.PathValue("name")
	by := caller(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	state, err := s.Backend.ChangeUpstream(name, c)
	var ce *ChangeError
	switch {
	case errors.Is(err, ErrNoSet):
		fail(w, http.StatusNotFound, "no upstream set %q: GET /upstreams lists them", name)
		return
	case errors.As(err, &ce):
		fail(w, http.StatusBadRequest, "%s", ce.Msg)
		return
	case err != nil && state.Name == "":
		s.log().Error("admin: upstream change failed", "by", by, "set", name, "error", err)
		fail(w, http.StatusServiceUnavailable, "%v", err)
		return
	}
	attrs := []any{"by", by, "set", name, "method", r.Method, "hosts", len(state.Hosts)}
	for _, h := range c.Hosts {
		attrs = append(attrs, slog.String("host", h.Name))
	}
	for _, h := range c.Add {
		attrs = append(attrs, slog.String("add", h.Name))
	}
	for _, h := range c.Remove {
		attrs = append(attrs, slog.String("remove", h))
	}
	s.changed(name, state.Specs())
	if err != nil {
		// Applied by some processes, not confirmed by all.
		s.log().Error("admin: upstream changed, not confirmed by every worker", append(attrs, "error", err)...)
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": err.Error(), "set": state})
		return
	}
	s.log().Info("admin: upstream set changed", attrs...)
	writeJSON(w, http.StatusOK, state)
}

// purgeBody is POST /purge's JSON: cache_purge's, with the host.
type purgeBody struct {
	Host string `json:"host"`
	components.PurgeBody
}

func (s *Server) purge(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r, components.MaxPurgeBody)
	if !ok {
		return
	}
	var b purgeBody
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		fail(w, http.StatusBadRequest, `want a JSON object {"host": HOST, "urls": [...], "tags": [...], "prefixes": [...]}: %v`, err)
		return
	}
	if b.Host == "" {
		fail(w, http.StatusBadRequest, `host is required: the host whose responses are purged, as requests name it ("example.com")`)
		return
	}
	p, status, msg := b.PurgeBody.Purge(b.Host)
	if status != 0 {
		fail(w, status, "%s", msg)
		return
	}
	n, processes, err := s.Backend.Purge(p)
	var ie *components.PurgeItemError
	switch {
	case errors.As(err, &ie):
		fail(w, http.StatusBadRequest, "%s", ie.Error())
		return
	case err != nil:
		s.log().Error("admin: purge not confirmed by every worker", "by", caller(r), "host", b.Host, "error", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"purged": n, "processes": processes, "error": err.Error()})
		return
	}
	s.log().Info("admin: purged", "by", caller(r), "host", b.Host, "purged", n, "processes", processes)
	writeJSON(w, http.StatusOK, map[string]any{"purged": n, "processes": processes})
}
