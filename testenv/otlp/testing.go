package otlp

import "testing"

// StartT starts a receiver for the test t, failing it at once if that is
// not possible, and stops it when the test (and its subtests) end. If the
// test failed, it logs how many spans arrived and the last few.
func StartT(t testing.TB, opts Options) *Receiver {
	t.Helper()
	r, err := Start(opts)
	if err != nil {
		t.Fatalf("starting the OTLP receiver: %v", err)
	}
	t.Cleanup(func() {
		r.Stop()
		if t.Failed() {
			t.Logf("OTLP receiver (gRPC %s, HTTP %s): %s", r.GRPCAddr(), r.HTTPAddr(), r.summary())
		}
	})
	return r
}
