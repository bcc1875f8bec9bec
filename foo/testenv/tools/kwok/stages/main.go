// Command stages writes the kwok Stage objects the test control plane uses, as
// one multi-document YAML stream on standard output: nodes become Ready at
// once and renew their Lease; pods become Ready at once, complete, and are
// removed when deleted. The Stage definitions are the ones shipped in the kwok
// module, so they always match the kwok binary built from the same module.
package main

import (
	"fmt"
	"os"
	"strings"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodelease "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

func main() {
	docs := []string{
		nodefast.DefaultNodeInit,
		nodelease.DefaultNodeHeartbeatWithLease,
		podfast.DefaultPodReady,
		podfast.DefaultPodComplete,
		podfast.DefaultPodDelete,
	}
	for i, d := range docs {
		docs[i] = strings.TrimSpace(d) + "\n"
	}
	if _, err := fmt.Print(strings.Join(docs, "---\n")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
