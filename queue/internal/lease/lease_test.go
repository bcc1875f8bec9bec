package lease

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRequestTimeout(t *testing.T) {
	for _, tc := range []struct {
		name                string
		lease, renew, retry time.Duration
		want                time.Duration
	}{
		{name: "defaults", lease: 15 * time.Second, renew: 10 * time.Second, retry: 2 * time.Second, want: 4 * time.Second},
		{name: "short lease", lease: 4 * time.Second, renew: 3 * time.Second, retry: 500 * time.Millisecond, want: time.Second},
		{name: "long lease", lease: 60 * time.Second, renew: 10 * time.Second, retry: 2 * time.Second, want: 4 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RequestTimeout(tc.lease, tc.renew, tc.retry)
			assert.Equal(t, tc.want, got)
			// A renewal sent one retry period into the renew deadline
			// that hangs, and its retry that hangs too, end within it.
			assert.Less(t, tc.retry+2*got, tc.renew+time.Nanosecond)
			assert.LessOrEqual(t, got, tc.lease-tc.renew)
		})
	}
}
