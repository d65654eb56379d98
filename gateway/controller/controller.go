// Package controller runs the Gateway API controller of a Sluice data
// plane: it watches the objects package translate reads with client-go
// informers, translates them after each burst of changes, applies the
// result through the data plane's admin API, and writes the status back.
//
// A change that alters only the endpoints behind the routes (pods added,
// removed, becoming ready or not) is applied with PUT /upstreams/NAME,
// which changes the upstream sets without a reload; any other change loads
// the whole config with POST /load, which drops no connection either.
package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	gatewayclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	gatewayinformers "sigs.k8s.io/gateway-api/pkg/client/informers/externalversions"

	"github.com/sluice-server/sluice/gateway/translate"
)

// Config configures a Controller. Kube, Gateway, AdminSocket and
// Options.ControllerName are required.
type Config struct {
	// Kube and Gateway are the clients of the cluster: its core and
	// discovery APIs, and its Gateway API.
	Kube    kubernetes.Interface
	Gateway gatewayclient.Interface

	// AdminSocket is the path of the data plane's admin API socket.
	AdminSocket string

	// ConfigDir is the directory of the data plane's config file, where
	// the TLS files a config names are written (relative to it) before
	// the config is loaded. Empty: the directory of AdminSocket.
	ConfigDir string

	// Options are the translation's (controller name, address pool...).
	// Options.AdminSocket is set to AdminSocket when empty, so that every
	// config loaded keeps the API.
	Options translate.Options

	// Debounce is how long the controller waits after a change for more
	// before it translates (default 100ms): a burst of changes is
	// applied once.
	Debounce time.Duration

	// Resync is the informers' resync period (0: none).
	Resync time.Duration

	// Verify is how often the controller checks, when nothing changes,
	// that the data plane still serves the config it loaded (default
	// 10s): a data plane restarted, or loaded by someone else, is loaded
	// again. Each reconcile checks too.
	Verify time.Duration

	// Logger receives what the controller does (default slog.Default()).
	Logger *slog.Logger
}

// Stats counts what a Controller applied, for tests and metrics.
type Stats struct {
	Reconciles     int // translations made
	Loads          int // configs loaded with POST /load
	UpstreamPuts   int // upstream sets changed with PUT /upstreams/NAME
	StatusWrites   int // status updates written
	Failures       int // reconciles that failed to apply or write
	LastLoadError  string
	LastApplyError string
	// Leading is whether the controller writes status: always under
	// Run, while it holds the Lease under RunElected.
	Leading bool
}

// Controller is a Gateway API controller driving one Sluice data plane.
// Its methods are safe for concurrent use; Run is called once.
type Controller struct {
	cfg    Config
	log    *slog.Logger
	admin  *http.Client
	kubeF  informers.SharedInformerFactory
	secF   informers.SharedInformerFactory // TLS Secrets alone
	gwF    gatewayinformers.SharedInformerFactory
	kick   chan struct{}
	synced []cache.InformerSynced

	mu      sync.Mutex
	stats   Stats
	applied *translate.Result // the result the data plane serves; nil before the first load
	loaded  []byte            // the config text last loaded, as GET /config gives it back
	elected bool              // RunElected runs it: status only while Leading
}

// New returns a Controller for cfg, its informers registered but not
// started (Run starts them).
func New(cfg Config) (*Controller, error) {
	if cfg.Kube == nil || cfg.Gateway == nil || cfg.AdminSocket == "" || cfg.Options.ControllerName == "" {
		return nil, errors.New("controller: Kube, Gateway, AdminSocket and Options.ControllerName are required")
	}
	if cfg.Debounce <= 0 {
		cfg.Debounce = 100 * time.Millisecond
	}
	if cfg.Verify <= 0 {
		cfg.Verify = 10 * time.Second
	}
	if cfg.ConfigDir == "" {
		cfg.ConfigDir = filepath.Dir(cfg.AdminSocket)
	}
	if cfg.Options.AdminSocket == "" {
		cfg.Options.AdminSocket = cfg.AdminSocket
	}
	c := &Controller{
		cfg:   cfg,
		log:   cfg.Logger,
		kubeF: informers.NewSharedInformerFactory(cfg.Kube, cfg.Resync),
		secF: informers.NewSharedInformerFactoryWithOptions(cfg.Kube, cfg.Resync, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = "type=" + string(corev1.SecretTypeTLS) // a listener's certificates; not every Secret of the cluster
		})),
		gwF:  gatewayinformers.NewSharedInformerFactory(cfg.Gateway, cfg.Resync),
		kick: make(chan struct{}, 1),
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.admin = &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", cfg.AdminSocket)
		}},
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.Kick() },
		UpdateFunc: func(any, any) { c.Kick() },
		DeleteFunc: func(any) { c.Kick() },
	}
	for _, inf := range []cache.SharedIndexInformer{
		c.kubeF.Core().V1().Namespaces().Informer(),
		c.kubeF.Core().V1().Services().Informer(),
		c.secF.Core().V1().Secrets().Informer(),
		c.kubeF.Discovery().V1().EndpointSlices().Informer(),
		c.gwF.Gateway().V1().GatewayClasses().Informer(),
		c.gwF.Gateway().V1().Gateways().Informer(),
		c.gwF.Gateway().V1().HTTPRoutes().Informer(),
		c.gwF.Gateway().V1().GRPCRoutes().Informer(),
		c.gwF.Gateway().V1().ReferenceGrants().Informer(),
	} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, err
		}
		c.synced = append(c.synced, inf.HasSynced)
	}
	return c, nil
}

// Kick asks for a reconcile: the next one starts Debounce after the last
// of a burst of kicks. It never blocks.
func (c *Controller) Kick() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Stats returns what the controller has applied so far.
func (c *Controller) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Run starts the informers, waits for their caches, and reconciles after
// every burst of changes until ctx is done, when it returns nil (or the
// error that kept it from starting). A reconcile that fails is tried
// again, after a second and then up to a minute apart.
func (c *Controller) Run(ctx context.Context) error {
	c.log.Info("gateway controller: starting; waiting for the informers' caches", "controller", c.cfg.Options.ControllerName)
	c.mu.Lock()
	if !c.elected {
		c.stats.Leading = true
	}
	c.mu.Unlock()
	c.kubeF.Start(ctx.Done())
	c.secF.Start(ctx.Done())
	c.gwF.Start(ctx.Done())
	defer c.kubeF.Shutdown()
	defer c.secF.Shutdown()
	defer c.gwF.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("controller: the informers' caches did not sync")
	}
	c.log.Info("gateway controller: caches synced; reconciling", "controller", c.cfg.Options.ControllerName, "admin", c.cfg.AdminSocket)
	c.Kick()
	backoff := time.Second
	var retry <-chan time.Time
	verify := time.NewTicker(c.cfg.Verify)
	defer verify.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.kick:
		case <-retry:
		case <-verify.C:
		}
		// Debounce: wait until the changes stop for a while.
		for quiet := false; !quiet; {
			select {
			case <-ctx.Done():
				return nil
			case <-c.kick:
			case <-time.After(c.cfg.Debounce):
				quiet = true
			}
		}
		if err := c.reconcile(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			c.log.Error("gateway controller: reconcile failed; trying again", "err", err, "in", backoff)
			retry = time.After(backoff)
			backoff = min(2*backoff, time.Minute)
			continue
		}
		retry, backoff = nil, time.Second
	}
}

// snapshot lists every object the translation reads from the caches.
func (c *Controller) snapshot() (*translate.Snapshot, error) {
	s := &translate.Snapshot{}
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	var err error
	all := labels.Everything()
	s.GatewayClasses, err = c.gwF.Gateway().V1().GatewayClasses().Lister().List(all)
	add(err)
	s.Gateways, err = c.gwF.Gateway().V1().Gateways().Lister().List(all)
	add(err)
	s.HTTPRoutes, err = c.gwF.Gateway().V1().HTTPRoutes().Lister().List(all)
	add(err)
	s.GRPCRoutes, err = c.gwF.Gateway().V1().GRPCRoutes().Lister().List(all)
	add(err)
	s.ReferenceGrants, err = c.gwF.Gateway().V1().ReferenceGrants().Lister().List(all)
	add(err)
	s.Namespaces, err = c.kubeF.Core().V1().Namespaces().Lister().List(all)
	add(err)
	s.Services, err = c.kubeF.Core().V1().Services().Lister().List(all)
	add(err)
	s.EndpointSlices, err = c.kubeF.Discovery().V1().EndpointSlices().Lister().List(all)
	add(err)
	s.Secrets, err = c.secF.Core().V1().Secrets().Lister().List(all)
	add(err)
	return s, errors.Join(errs...)
}

// reconcile translates the caches' objects, applies the result and
// writes the status.
func (c *Controller) reconcile(ctx context.Context) error {
	snap, err := c.snapshot()
	if err != nil {
		return err
	}
	res := translate.Translate(snap, c.cfg.Options)
	c.mu.Lock()
	c.stats.Reconciles++
	c.mu.Unlock()
	applyErr := c.apply(ctx, res)
	if applyErr != nil {
		c.mu.Lock()
		c.stats.Failures++
		c.stats.LastApplyError = applyErr.Error()
		c.mu.Unlock()
	}
	c.mu.Lock()
	write := !c.elected || c.stats.Leading
	c.mu.Unlock()
	var statusErr error
	if write {
		statusErr = c.writeStatus(ctx, res, applyErr)
	}
	return errors.Join(applyErr, statusErr)
}

// apply makes the data plane serve res: the upstream sets alone when
// only they changed since the result it serves, else the whole config.
func (c *Controller) apply(ctx context.Context, res *translate.Result) error {
	c.mu.Lock()
	prev, loaded := c.applied, c.loaded
	c.mu.Unlock()
	if prev != nil {
		running, err := c.runningConfig(ctx)
		if err != nil || !bytes.Equal(running, loaded) {
			c.log.Warn("gateway controller: the data plane does not serve the config loaded (restarted, or loaded by another); loading it again", "err", err)
			prev = nil
		}
	}
	if prev != nil && bytes.Equal(prev.Skeleton, res.Skeleton) && maps.EqualFunc(prev.Files, res.Files, bytes.Equal) {
		if bytes.Equal(prev.Config, res.Config) {
			return nil
		}
		err := c.putUpstreams(ctx, prev, res)
		if err == nil {
			c.mu.Lock()
			c.applied = res
			c.mu.Unlock()
			return nil
		}
		c.log.Warn("gateway controller: changing upstream sets failed; loading the whole config", "err", err)
	}
	if err := c.writeFiles(res.Files); err != nil {
		return err
	}
	if err := c.call(ctx, http.MethodPost, "/load", res.Config); err != nil {
		c.mu.Lock()
		c.stats.LastLoadError = err.Error()
		c.mu.Unlock()
		return fmt.Errorf("loading the config: %w", err)
	}
	c.mu.Lock()
	c.applied, c.loaded = res, res.Config
	c.stats.Loads++
	c.mu.Unlock()
	c.log.Info("gateway controller: config loaded", "bytes", len(res.Config), "upstream_sets", len(res.Upstreams))
	return nil
}

// putUpstreams changes the sets whose hosts differ between prev and res.
func (c *Controller) putUpstreams(ctx context.Context, prev, res *translate.Result) error {
	names := slices.Sorted(maps.Keys(res.Upstreams))
	for _, name := range names {
		hosts := res.Upstreams[name]
		if slices.Equal(prev.Upstreams[name], hosts) {
			continue
		}
		body, err := json.Marshal(map[string]any{"hosts": hosts})
		if err != nil {
			return err
		}
		if err := c.call(ctx, http.MethodPut, "/upstreams/"+name, body); err != nil {
			return fmt.Errorf("upstream set %s: %w", name, err)
		}
		c.mu.Lock()
		c.stats.UpstreamPuts++
		c.mu.Unlock()
		c.log.Info("gateway controller: upstream set changed", "set", name, "hosts", len(hosts))
	}
	return nil
}

// writeFiles writes the result's files under ConfigDir, each by a rename
// so that a config loaded never reads half a file.
func (c *Controller) writeFiles(files map[string][]byte) error {
	for name, data := range files {
		p := filepath.Join(c.cfg.ConfigDir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		tmp := p + ".tmp"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, p); err != nil {
			return err
		}
	}
	return nil
}

// runningConfig returns the text of the data plane's running config.
func (c *Controller) runningConfig(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://admin/config", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/yaml")
	resp, err := c.admin.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("admin API GET /config: %s", resp.Status)
	}
	return data, err
}

// call makes one admin API request, returning the API's error (its JSON
// error and errors) when the answer is not 2xx.
func (c *Controller) call(ctx context.Context, method, path string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://admin"+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json") // a config is YAML, and JSON is YAML
	resp, err := c.admin.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("admin API %s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(data))
	}
	return nil
}
