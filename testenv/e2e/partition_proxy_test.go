package e2e

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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

	// Figures for the test's log.
	forwarded, hung, refused atomic.Int64 // connections accepted in each mode
	dropped                  atomic.Int64 // bytes read but not forwarded
	// perTarget counts the connections forwarded to each target.
	perTarget []atomic.Int64
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
	p.mu.Lock()
	p.mode.Store(int32(m))
	open := p.conns
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
	for c := range open {
		_ = c.Close()
	}
}

// close stops the listener, closes every connection and waits for the
// proxy's goroutines.
func (p *faultProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
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
