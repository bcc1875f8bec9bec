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
	seen map[string][]byte
}

// Set reports name to m with the config of kubeconfig, unless it was last
// reported with the same kubeconfig. A kubeconfig that cannot be read, or
// that asks for what the Policy does not allow (the error then wraps
// ErrNotAllowed), refuses the member (Refuse) and is returned, wrapped.
func (k *Kubeconfigs) Set(m multicluster.Members, name string, kubeconfig []byte) error {
	k.mu.Lock()
	unchanged := bytes.Equal(k.seen[name], kubeconfig) && k.seen[name] != nil
	k.mu.Unlock()
	if unchanged {
		return nil
	}
	cfg, err := k.Policy.Config(kubeconfig)
	if err != nil {
		k.Refuse(m, name, err)
		return err
	}
	k.mu.Lock()
	if k.seen == nil {
		k.seen = map[string][]byte{}
	}
	k.seen[name] = bytes.Clone(kubeconfig)
	k.mu.Unlock()
	m.Set(name, cfg)
	return nil
}

// Refuse reports that name is no member because of err: with m's Refuse
// where m is a multicluster.Refuser, else with its Delete.
func (k *Kubeconfigs) Refuse(m multicluster.Members, name string, err error) {
	k.mu.Lock()
	delete(k.seen, name)
	k.mu.Unlock()
	if r, ok := m.(multicluster.Refuser); ok {
		r.Refuse(name, err)
		return
	}
	m.Delete(name)
}

// Delete reports that name is no member.
func (k *Kubeconfigs) Delete(m multicluster.Members, name string) {
	k.mu.Lock()
	delete(k.seen, name)
	k.mu.Unlock()
	m.Delete(name)
}
