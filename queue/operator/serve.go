package operator

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// serverShutdownTimeout bounds how long a server waits for requests in
// progress when Run stops.
const serverShutdownTimeout = 5 * time.Second

// servers are the HTTP servers of one Run, one per address.
type servers struct {
	logger    klog.Logger
	listeners []net.Listener
	servers   []*http.Server
	wg        sync.WaitGroup
}

// serve listens on the configured addresses; it fails, having closed what
// it opened, when an address cannot be listened on.
func serve(ctx context.Context, c *config, leading func() bool) (*servers, error) {
	s := &servers{logger: klog.FromContext(ctx)}
	muxes := map[string]*http.ServeMux{}
	mux := func(addr string) *http.ServeMux {
		if muxes[addr] == nil {
			muxes[addr] = http.NewServeMux()
		}
		return muxes[addr]
	}
	if c.probeAddr != "" {
		m := mux(c.probeAddr)
		m.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { healthy(w, c) })
		m.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) { ready(w, r, c, leading) })
	}
	if c.metricsAddr != "" {
		mux(c.metricsAddr).Handle("/metrics", c.metrics)
	}
	if c.pprofAddr != "" {
		m := mux(c.pprofAddr)
		m.HandleFunc("/debug/pprof/", pprof.Index)
		m.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		m.HandleFunc("/debug/pprof/profile", pprof.Profile)
		m.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		m.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	handlers := map[string]http.Handler{}
	for addr, m := range muxes {
		handlers[addr] = m
	}
	if c.webhooks != nil {
		if _, shared := muxes[c.webhooks.Addr()]; shared {
			return nil, fmt.Errorf("operator: the webhooks need an address of their own, not %s", c.webhooks.Addr())
		}
		handlers[c.webhooks.Addr()] = c.webhooks.Handler()
	}
	for addr, h := range handlers {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			for _, l := range s.listeners {
				_ = l.Close()
			}
			return nil, fmt.Errorf("operator: listening on %s: %w", addr, err)
		}
		if c.webhooks != nil && addr == c.webhooks.Addr() {
			ln = tls.NewListener(ln, c.webhooks.TLSConfig())
		}
		s.listeners = append(s.listeners, ln)
		s.servers = append(s.servers, &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		})
	}
	return s, nil
}

// start serves until shutdown; a server that fails calls fail.
func (s *servers) start(fail func(error)) {
	for i, srv := range s.servers {
		ln := s.listeners[i]
		s.logger.Info("Serving", "address", ln.Addr().String())
		s.wg.Go(func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				fail(fmt.Errorf("operator: serving on %s: %w", ln.Addr(), err))
			}
		})
	}
}

// shutdown stops the servers, letting requests in progress finish for a
// while, and waits for them.
func (s *servers) shutdown(ctx context.Context) {
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), serverShutdownTimeout)
	defer cancel()
	for _, srv := range s.servers {
		if err := srv.Shutdown(shutdownCtx); err != nil {
			_ = srv.Close()
		}
	}
	s.wg.Wait()
}

// healthy answers /healthz.
func healthy(w http.ResponseWriter, c *config) {
	if err := c.unhealthy.Load(); err != nil {
		http.Error(w, (*err).Error(), http.StatusInternalServerError)
		return
	}
	fmt.Fprintln(w, "ok")
}

// ready answers /readyz.
func ready(w http.ResponseWriter, r *http.Request, c *config, leading func() bool) {
	var problems []string
	for i, ctrl := range c.controllers {
		if !ctrl.HasSynced() {
			problems = append(problems, fmt.Sprintf("controller %s has not synced", controllerName(ctrl, i)))
		}
	}
	if !leading() {
		problems = append(problems, "not leading")
	}
	if c.sharding != nil && !c.sharding.HasSynced() {
		problems = append(problems, "shard membership has not synced")
	}
	if c.webhooks != nil {
		if err := c.webhooks.Ready(); err != nil {
			problems = append(problems, err.Error())
		}
	}
	for _, ck := range c.checks {
		if err := ck.fn(r); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", ck.name, err))
		}
	}
	if len(problems) > 0 {
		http.Error(w, strings.Join(problems, "\n"), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

// controllerName names a controller in readiness reports.
func controllerName(ctrl Controller, i int) string {
	if n, ok := ctrl.(interface{ Name() string }); ok {
		return n.Name()
	}
	return fmt.Sprint(i)
}
