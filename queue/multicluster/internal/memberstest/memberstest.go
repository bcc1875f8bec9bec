// Package memberstest records what a multicluster.Provider reports, for
// the providers' tests.
package memberstest

import (
	"slices"
	"sync"

	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
)

// Recorder is a multicluster.Members that records every call as a line:
// "set NAME " followed by what Describe makes of the config, "delete
// NAME", "refuse NAME: " followed by the error, "synced". It is safe for
// concurrent use.
type Recorder struct {
	// Describe describes a config in the lines of Set.
	Describe func(cfg *rest.Config) string

	mu    sync.Mutex
	calls []string
}

var _ multicluster.Members = (*Recorder)(nil)

// Set records a set.
func (r *Recorder) Set(name string, cfg *rest.Config) {
	r.record("set " + name + " " + r.Describe(cfg))
}

// Delete records a delete.
func (r *Recorder) Delete(name string) { r.record("delete " + name) }

// Refuse records a refusal.
func (r *Recorder) Refuse(name string, err error) { r.record("refuse " + name + ": " + err.Error()) }

// Synced records that the provider synced.
func (r *Recorder) Synced() { r.record("synced") }

func (r *Recorder) record(call string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call)
}

// Calls returns the lines recorded so far.
func (r *Recorder) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}
