package shard

import (
	"context"
	"testing"
	"time"
)

// startRun makes a Membership of cfg and runs it until the test cancels
// it or ends; done receives what Run returned.
func startRun(t *testing.T, cfg Config) (m *Membership, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	result := make(chan error, 1)
	go func() { result <- m.Run(ctx) }()
	return m, cancel, result
}

// waitUntil polls ok for up to a minute and fails the test if it does not
// hold by then or Run returns first.
func waitUntil(t *testing.T, done <-chan error, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %s", what)
		}
		select {
		case err := <-done:
			t.Fatalf("%s: Run returned %v", what, err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
