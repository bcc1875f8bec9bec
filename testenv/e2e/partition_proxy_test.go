package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certutil "k8s.io/client-go/util/cert"
)

// faultMode is what a faultProxy does with connections.
type faultMode int32

const (
	// faultForward forwards every byte both ways.
	faultForward faultMode = iota
	// faultHang stops reading and writing: the connections stay open, new
	// ones are accepted and then left alone, and nothing crosses.
	faultHang
	// faultRefuse closes every connection, and each new one as soon as it
	// is accepted.
	faultRefuse
)

// errFaultCut ends a pump whose connection was cut.
var errFaultCut = errors.New("connection cut")

// faultProxy is a TCP forwarder on a loopback port in front of one address
// (kube-apiserver's), or of several that it takes in turn for each new
// connection (replicas of a server), byte for byte, so TLS passes through
// it untouched.
// Cut, Reset and Heal put it in faultHang, faultRefuse and faultForward.
// A connection that was open when the proxy was cut never forwards again,
// also after Heal: the bytes it held back were dropped, so its stream is
// broken, and its peers get it closed by Reset or Heal. The bytes a cut
// proxy holds back are thus never delivered late.
type faultProxy struct {
	ln      net.Listener
	targets []string
	// next counts the connections dialled, to take the targets in turn.
	next atomic.Uint64

	// mode and epoch are changed under mu; epoch counts the cuts, and a
	// pair forwards only while the mode is faultForward and the epoch is
	// the one it was opened in.
	mode  atomic.Int32
	epoch atomic.Uint64
	// gate is held shared around every check-then-write of a pump, so
	// that Cut, which takes it exclusively after changing the mode,
	// returns only once no write of the former mode is under way.
	gate sync.RWMutex

	mu     sync.Mutex
	conns  map[net.Conn]struct{} // open connections, both sides
	closed bool
	wg     sync.WaitGroup

	// Figures for the test's log: connections accepted in each mode (in
	// HTTP mode, forwarded counts the requests forwarded).
	forwarded, hung, refused atomic.Int64
	dropped                  atomic.Int64 // bytes read but not forwarded
	// perTarget counts the connections forwarded to each target.
	perTarget []atomic.Int64

	// The HTTP mode's: srv serves the accepted connections and relay
	// sends the requests on through upstream; quit is closed by close, to
	// end the requests still held; caPEM is what a client trusts to reach
	// the proxy. held lists the requests held, in the order they ended,
	// under mu.
	srv      *http.Server
	rule     requestRule
	relay    *httputil.ReverseProxy
	upstream *http.Transport
	quit     chan struct{}
	caPEM    []byte
	held     []heldRequest
}

// requestFault is what a faultProxy in HTTP mode does with one request
// before it forwards it; the zero value forwards it at once.
type requestFault struct {
	// delay holds the request this long, then forwards it, unless the
	// client gave up meanwhile.
	delay time.Duration
	// hang holds the request until the client gives up (or the proxy
	// closes): it is never forwarded.
	hang bool
}

// requestRule chooses the fault of a request, once, as it arrives. It
// runs on the proxy's goroutines, so it must be safe for concurrent use.
type requestRule func(*http.Request) requestFault

// heldRequest is a request a faultProxy in HTTP mode held.
type heldRequest struct {
	method, path string
	fault        requestFault
	// at is when it arrived, held how long it was held.
	at   time.Time
	held time.Duration
	// abandoned: the client gave up while it was held, and it was not
	// forwarded.
	abandoned bool
}

// proxyPair is one forwarded connection: the client's and the upstream.
type proxyPair struct {
	client, upstream net.Conn
	epoch            uint64
}

// startFaultProxy listens on 127.0.0.1 and forwards each connection to the
// next of targets (host:port), in turn; it is closed, and its goroutines
// gone, when t ends.
func startFaultProxy(t *testing.T, targets ...string) *faultProxy {
	t.Helper()
	require.NotEmpty(t, targets)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &faultProxy{ln: ln, targets: targets, perTarget: make([]atomic.Int64, len(targets)), conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

// startRequestFaultProxy listens on 127.0.0.1 in HTTP mode (see
// faultProxy) in front of target (host:port), whose certificate is signed
// by targetCA (PEM), and holds each request as rule says. Clients reach it
// over TLS (HTTP/2 or HTTP/1.1) for the name 127.0.0.1, trusting
// p.caPEM. It is closed, every request still held ended, and its
// goroutines gone, when t ends.
func startRequestFaultProxy(t *testing.T, target string, targetCA []byte, rule requestRule) *faultProxy {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	require.NoError(t, err)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(targetCA), "the target's CA is PEM")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &faultProxy{ln: ln, targets: []string{target}, perTarget: make([]atomic.Int64, 1), conns: map[net.Conn]struct{}{},
		rule: rule, quit: make(chan struct{}), caPEM: certPEM}
	p.upstream = &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: true,
	}
	up := &url.URL{Scheme: "https", Host: target}
	quiet := log.New(io.Discard, "", 0)
	p.relay = &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(up) },
		Transport: p.upstream,
		// Watches stream: every write goes on at once.
		FlushInterval: -1,
		ErrorLog:      quiet,
	}
	p.srv = &http.Server{
		Handler:           http.HandlerFunc(p.serveRequest),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: time.Minute,
		ErrorLog:          quiet,
	}
	p.wg.Go(func() { _ = p.srv.ServeTLS(ln, "", "") })
	t.Cleanup(p.close)
	return p
}

// serveRequest holds r as the rule says and forwards it, or drops it: a
// request that is not forwarded ends with its stream reset (its
// connection closed, over HTTP/1.1), never with an answer.
func (p *faultProxy) serveRequest(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		panic(http.ErrAbortHandler)
	}
	// Counted under mu, before close can wait: no Add races the Wait.
	p.wg.Add(1)
	p.mu.Unlock()
	defer p.wg.Done()
	f := p.rule(r)
	if f.hang || f.delay > 0 {
		h := heldRequest{method: r.Method, path: r.URL.Path, fault: f, at: time.Now()}
		var due <-chan time.Time
		if !f.hang {
			timer := time.NewTimer(f.delay)
			defer timer.Stop()
			due = timer.C
		}
		forward := false
		select {
		case <-due:
			forward = true
		case <-r.Context().Done():
			h.abandoned = true
		case <-p.quit:
		}
		h.held = time.Since(h.at)
		p.mu.Lock()
		p.held = append(p.held, h)
		p.mu.Unlock()
		if !forward {
			panic(http.ErrAbortHandler)
		}
	}
	p.forwarded.Add(1)
	p.relay.ServeHTTP(w, r)
}

// heldRequests returns the requests held so far, in the order they ended.
func (p *faultProxy) heldRequests() []heldRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]heldRequest(nil), p.held...)
}

// addr is the proxy's host:port.
func (p *faultProxy) addr() string { return p.ln.Addr().String() }

func (p *faultProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		// The accept loop holds a count of wg, so Add cannot race Wait.
		p.wg.Go(func() { p.serve(c) })
	}
}

// serve connects an accepted connection as the mode says.
func (p *faultProxy) serve(c net.Conn) {
	var up net.Conn
	target := int((p.next.Add(1) - 1) % uint64(len(p.targets)))
	if faultMode(p.mode.Load()) == faultForward {
		var err error
		if up, err = net.DialTimeout("tcp", p.targets[target], 5*time.Second); err != nil {
			_ = c.Close()
			return
		}
	}
	// The mode may have changed during the dial: decide under mu, where
	// it changes.
	p.mu.Lock()
	mode := faultMode(p.mode.Load())
	switch {
	case p.closed || mode == faultRefuse:
		p.mu.Unlock()
		p.refused.Add(1)
		closeAll(c, up)
		return
	case mode == faultHang || up == nil:
		// Hold it open without reading: the client waits for an answer
		// that does not come.
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.hung.Add(1)
		closeAll(up)
		return
	}
	pair := &proxyPair{client: c, upstream: up, epoch: p.epoch.Load()}
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	p.forwarded.Add(1)
	p.perTarget[target].Add(1)
	p.wg.Go(func() { p.pump(pair, up, c) })
	p.pump(pair, c, up)
}

// pump copies src to dst until either fails or the pair is cut; a cut
// pump leaves both connections open (they hang) for Reset or Heal.
func (p *faultProxy) pump(pair *proxyPair, dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if werr := p.forward(pair, dst, buf[:n]); werr != nil {
				err = werr
			}
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, errFaultCut) && p.live(pair) {
			// An end closed while forwarding: close the other too.
			p.mu.Lock()
			delete(p.conns, pair.client)
			delete(p.conns, pair.upstream)
			p.mu.Unlock()
			closeAll(pair.client, pair.upstream)
		}
		return
	}
}

// forward writes b to dst if the pair still forwards, and otherwise drops
// it and returns errFaultCut.
func (p *faultProxy) forward(pair *proxyPair, dst net.Conn, b []byte) error {
	p.gate.RLock()
	defer p.gate.RUnlock()
	if !p.live(pair) {
		p.dropped.Add(int64(len(b)))
		return errFaultCut
	}
	_, err := dst.Write(b)
	return err
}

// live reports whether the pair forwards.
func (p *faultProxy) live(pair *proxyPair) bool {
	return faultMode(p.mode.Load()) == faultForward && p.epoch.Load() == pair.epoch
}

// cut stops forwarding: once it returns, no byte crosses the proxy until
// Heal, and then only on new connections. Open connections hang.
func (p *faultProxy) cut() {
	p.byteModeOnly()
	p.mu.Lock()
	p.mode.Store(int32(faultHang))
	p.epoch.Add(1)
	open := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		open = append(open, c)
	}
	p.mu.Unlock()
	// A deadline in the past wakes the pumps blocked in a read or a
	// write; they find the pair cut and stop without closing it.
	for _, c := range open {
		_ = c.SetDeadline(time.Unix(1, 0))
	}
	// Waits out the writes that began before the mode changed.
	p.gate.Lock()
	p.gate.Unlock() //nolint:staticcheck // an empty critical section is the point: a barrier
}

// reset closes every connection (peers see a reset or EOF) and refuses
// new ones until Heal.
func (p *faultProxy) reset() { p.setMode(faultRefuse) }

// heal forwards new connections again; those left from before are closed.
func (p *faultProxy) heal() { p.setMode(faultForward) }

func (p *faultProxy) setMode(m faultMode) {
	p.byteModeOnly()
	p.mu.Lock()
	p.mode.Store(int32(m))
	open := p.conns
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
	for c := range open {
		_ = c.Close()
	}
}

// byteModeOnly panics in HTTP mode, whose connections are the server's.
func (p *faultProxy) byteModeOnly() {
	if p.srv != nil {
		panic("faultProxy: cut, reset and heal are for the byte mode")
	}
}

// close stops the listener, closes every connection, ends the requests
// still held and waits for the proxy's goroutines; it may be called again.
func (p *faultProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	again := p.closed
	p.closed = true
	p.mu.Unlock()
	if p.srv != nil {
		if !again {
			close(p.quit)
		}
		// Closing the connections cancels the requests being forwarded.
		_ = p.srv.Close()
		p.wg.Wait()
		p.upstream.CloseIdleConnections()
		return
	}
	p.reset()
	p.wg.Wait()
}

func closeAll(conns ...net.Conn) {
	for _, c := range conns {
		if c != nil {
			_ = c.Close()
		}
	}
}

// TestRequestFaultProxy shows the HTTP mode of faultProxy in front of a
// TLS server: a request the rule leaves alone is forwarded at once, a
// delayed one after its delay, a hung one never (the client that gives up
// gets no answer, and the proxy records it abandoned), and one still held
// when the proxy closes ends without an answer.
func TestRequestFaultProxy(t *testing.T) {
	t.Parallel()
	const delay = 300 * time.Millisecond
	var mu sync.Mutex
	seen := map[string]int{} // requests the target received, by path
	target := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path]++
		mu.Unlock()
		_, _ = io.WriteString(w, "answer to "+r.URL.Path)
	}))
	t.Cleanup(target.Close)
	targetCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: target.Certificate().Raw})
	arrived := make(chan string, 10)
	rule := func(r *http.Request) requestFault {
		arrived <- r.URL.Path
		switch r.URL.Path {
		case "/slow":
			return requestFault{delay: delay}
		case "/hang", "/hang-until-close":
			return requestFault{hang: true}
		}
		return requestFault{}
	}
	p := startRequestFaultProxy(t, strings.TrimPrefix(target.URL, "https://"), targetCA, rule)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(p.caPEM))
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, ForceAttemptHTTP2: true}
	t.Cleanup(transport.CloseIdleConnections)
	client := &http.Client{Transport: transport}
	get := func(ctx context.Context, path string) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+p.addr()+path, nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return string(body), err
	}
	seenOf := func(path string) int {
		mu.Lock()
		defer mu.Unlock()
		return seen[path]
	}

	body, err := get(t.Context(), "/fast")
	require.NoError(t, err)
	assert.Equal(t, "answer to /fast", body)
	assert.Empty(t, p.heldRequests(), "a request the rule leaves alone is not held")

	sent := time.Now()
	body, err = get(t.Context(), "/slow")
	require.NoError(t, err)
	assert.Equal(t, "answer to /slow", body)
	assert.GreaterOrEqual(t, time.Since(sent), delay, "a delayed request is answered after its delay")
	held := p.heldRequests()
	require.Len(t, held, 1)
	assert.Equal(t, "/slow", held[0].path)
	assert.False(t, held[0].abandoned)
	assert.GreaterOrEqual(t, held[0].held, delay)

	ctx, cancel := context.WithTimeout(t.Context(), delay)
	defer cancel()
	_, err = get(ctx, "/hang")
	require.ErrorIs(t, err, context.DeadlineExceeded, "a hung request is not answered")
	require.Eventually(t, func() bool { return len(p.heldRequests()) == 2 }, waitTimeout, 10*time.Millisecond, "the proxy sees the client give up")
	hung := p.heldRequests()[1]
	assert.Equal(t, "/hang", hung.path)
	assert.True(t, hung.abandoned, "the client gave up")
	assert.Zero(t, seenOf("/hang"), "a hung request is never forwarded")

	for range 3 {
		<-arrived // /fast, /slow, /hang
	}
	failed := make(chan error, 1)
	go func() {
		_, err := get(t.Context(), "/hang-until-close")
		failed <- err
	}()
	require.Equal(t, "/hang-until-close", <-arrived)
	p.close()
	assert.Error(t, <-failed, "a request held when the proxy closes gets no answer")
	assert.Zero(t, seenOf("/hang-until-close"))
	assert.Equal(t, 1, seenOf("/fast"))
	assert.Equal(t, 1, seenOf("/slow"))
}
