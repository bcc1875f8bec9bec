// Package reported keeps, for a multicluster.Provider, the kubeconfig each
// member was last reported with, so that the provider reports a member
// again only when its kubeconfig changed.
package reported

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// Kubeconfigs are the kubeconfigs of the members reported. The zero value
// is ready to use; it is safe for concurrent use.
type Kubeconfigs struct {
	mu   sync.Mutex
	seen map[string][]byte
}

// Set reports name to m with the config of kubeconfig, unless it was last
// reported with the same kubeconfig. A kubeconfig that cannot be read
// deletes the member and is returned, wrapped.
func (k *Kubeconfigs) Set(m multicluster.Members, name string, kubeconfig []byte) error {
	k.mu.Lock()
	unchanged := bytes.Equal(k.seen[name], kubeconfig) && k.seen[name] != nil
	k.mu.Unlock()
	if unchanged {
		return nil
	}
	if len(kubeconfig) == 0 {
		k.Delete(m, name)
		return errors.New("the kubeconfig is empty")
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		k.Delete(m, name)
		return fmt.Errorf("cannot read the kubeconfig: %w", err)
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

// Delete reports that name is no member.
func (k *Kubeconfigs) Delete(m multicluster.Members, name string) {
	k.mu.Lock()
	delete(k.seen, name)
	k.mu.Unlock()
	m.Delete(name)
}
