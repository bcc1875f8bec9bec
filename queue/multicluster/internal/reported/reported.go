// Package reported keeps, for a multicluster.Provider, the kubeconfig each
// member was last reported with, so that the provider reports a member
// again only when its kubeconfig changed, and refuses, by its Policy, the
// kubeconfigs that would run a command in the operator, read its files or
// turn off TLS verification.
package reported

import (
	"bytes"
	"sync"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// Kubeconfigs are the kubeconfigs of the members reported. The zero value
// is ready to use and allows nothing its Policy could allow; it is safe
// for concurrent use. Policy must not change once Set was called.
type Kubeconfigs struct {
	// Policy says what the kubeconfigs may ask for.
	Policy Policy

	mu   sync.Mutex
	last map[string]outcome
}

// outcome is what a member was last reported as: set with kubeconfig, or
// refused with err, whose message is refusal.
type outcome struct {
	kubeconfig []byte
	refused    bool
	refusal    string
	err        error
}

// Set reports name to m with the config of kubeconfig, unless it was last
// reported with the same kubeconfig. A kubeconfig that cannot be read, or
// that asks for what the Policy does not allow (the error then wraps
// ErrNotAllowed), refuses the member (see Refuse), and the error is
// returned; a refusal the same as name's last one is neither reported nor
// returned again, so that the caller logs and records an event only when
// the refusal changes. The error names what is wrong and never holds the
// kubeconfig's credentials.
func (k *Kubeconfigs) Set(m multicluster.Members, name string, kubeconfig []byte) error {
	k.mu.Lock()
	prev, ok := k.last[name]
	k.mu.Unlock()
	if ok && !prev.refused && bytes.Equal(prev.kubeconfig, kubeconfig) {
		return nil
	}
	// A refused kubeconfig is checked again even if it is unchanged: a
	// file the Policy allows may have become readable since.
	cfg, err := k.Policy.Config(kubeconfig)
	if err != nil {
		return k.Refuse(m, name, err)
	}
	k.remember(name, outcome{kubeconfig: bytes.Clone(kubeconfig)})
	m.Set(name, cfg)
	return nil
}

// Refuse reports that name is no member because of err, with m's Refuse
// where m is a multicluster.Refuser, else with its Delete, and returns
// err; if name's last report was a refusal with the same message, it
// reports nothing and returns nil.
func (k *Kubeconfigs) Refuse(m multicluster.Members, name string, err error) error {
	msg := err.Error()
	k.mu.Lock()
	prev, ok := k.last[name]
	k.mu.Unlock()
	if ok && prev.refused && prev.refusal == msg {
		return nil
	}
	k.remember(name, outcome{refused: true, refusal: msg, err: err})
	if r, ok := m.(multicluster.Refuser); ok {
		r.Refuse(name, err)
		return err
	}
	m.Delete(name)
	return err
}

// Delete reports that name is no member.
func (k *Kubeconfigs) Delete(m multicluster.Members, name string) {
	k.mu.Lock()
	delete(k.last, name)
	k.mu.Unlock()
	m.Delete(name)
}

// Refused returns the members whose last report was a refusal, by name,
// with the error they were refused with.
func (k *Kubeconfigs) Refused() map[string]error {
	k.mu.Lock()
	defer k.mu.Unlock()
	refused := map[string]error{}
	for name, o := range k.last {
		if o.refused {
			refused[name] = o.err
		}
	}
	return refused
}

// remember keeps o as name's last report.
func (k *Kubeconfigs) remember(name string, o outcome) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.last == nil {
		k.last = map[string]outcome{}
	}
	k.last[name] = o
}
