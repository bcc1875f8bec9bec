// Package system simulates, in-process, the external system of
// examples/external: named entries of key/value settings whose changes are
// announced on a channel.
package system

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"
)

// System stands for a system outside the cluster that owns the desired
// state of the Targets: named entries of key/value settings. It tells its
// watchers which entries changed, the way a message bus or webhook would,
// on a channel. It is simulated in-process.
type System struct {
	mu      sync.Mutex
	entries map[string]map[string]string
	changes chan []string
}

// New returns a System holding entries, whose notifications wait in
// a channel of the given capacity; a full channel drops them (a periodic
// full resync catches up), as a lossy bus would.
func New(entries map[string]map[string]string, capacity int) *System {
	s := &System{entries: map[string]map[string]string{}, changes: make(chan []string, capacity)}
	for name, data := range entries {
		s.entries[name] = maps.Clone(data)
	}
	return s
}

// Changes returns the channel of notifications: each names the entries that
// changed (or went).
func (s *System) Changes() <-chan []string { return s.changes }

// Get returns a copy of an entry's settings and whether it exists.
func (s *System) Get(name string) (map[string]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, ok := s.entries[name]
	return maps.Clone(data), ok
}

// Names returns the names of every entry, sorted.
func (s *System) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.entries))
}

// Set replaces an entry's settings and notifies.
func (s *System) Set(name string, data map[string]string) {
	s.mu.Lock()
	s.entries[name] = maps.Clone(data)
	s.mu.Unlock()
	s.notify(name)
}

// Delete removes an entry and notifies.
func (s *System) Delete(name string) {
	s.mu.Lock()
	delete(s.entries, name)
	s.mu.Unlock()
	s.notify(name)
}

func (s *System) notify(names ...string) {
	select {
	case s.changes <- names:
	default: // dropped: the periodic resync will see the change
	}
}

// Churn changes one entry every interval until ctx ends: it bumps the
// entry's "revision" setting, the way a user editing the external system
// would.
func (s *System) Churn(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		names := s.Names()
		if len(names) == 0 {
			continue
		}
		name := names[rand.IntN(len(names))]
		s.mu.Lock()
		data := maps.Clone(s.entries[name])
		if data == nil {
			data = map[string]string{}
		}
		data["revision"] = time.Now().UTC().Format(time.RFC3339Nano)
		s.entries[name] = data
		s.mu.Unlock()
		s.notify(name)
	}
}

// Entries are the entries of a System, by name; as a flag.Value (the
// --entry flag of the example) each value sets one entry:
// name=key=value[,key=value...].
type Entries map[string]map[string]string

func (e Entries) String() string { return fmt.Sprint(map[string]map[string]string(e)) }

// Set adds the entry v describes.
func (e Entries) Set(v string) error {
	name, settings, _ := strings.Cut(v, "=")
	if name == "" {
		return fmt.Errorf("want name=key=value[,key=value...], got %q", v)
	}
	data := map[string]string{}
	for kv := range strings.SplitSeq(settings, ",") {
		if kv == "" {
			continue
		}
		k, val, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("setting %q of entry %q: want key=value", kv, name)
		}
		data[k] = val
	}
	e[name] = data
	return nil
}
