package system_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ctrlkit/ctrlkit/examples/external/system"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestChurn(t *testing.T) {
	s := system.New(map[string]map[string]string{"a": {"v": "1"}}, 4)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Churn(ctx, time.Millisecond) }()
	got := <-s.Changes()
	assert.Equal(t, []string{"a"}, got)
	data, _ := s.Get("a")
	assert.NotEmpty(t, data["revision"])
	cancel()
	<-done
}

func TestSystem(t *testing.T) {
	s := system.New(map[string]map[string]string{"b": {"v": "1"}}, 1)
	s.Set("a", map[string]string{"v": "2"})
	s.Delete("b") // the channel holds one notification: this one is dropped
	assert.Equal(t, []string{"a"}, <-s.Changes())
	assert.Equal(t, []string{"a"}, s.Names())
	data, ok := s.Get("a")
	assert.True(t, ok)
	data["v"] = "changed"
	again, _ := s.Get("a")
	assert.Equal(t, "2", again["v"], "Get returns a copy")
	_, ok = s.Get("b")
	assert.False(t, ok)
}

func TestEntriesFlag(t *testing.T) {
	tests := []struct {
		value   string
		want    map[string]string
		wantErr string
	}{
		{value: "web=color=blue,size=2", want: map[string]string{"color": "blue", "size": "2"}},
		{value: "empty", want: map[string]string{}},
		{value: "trailing=a=1,", want: map[string]string{"a": "1"}},
		{value: "=a=1", wantErr: "want name=key=value"},
		{value: "bad=novalue", wantErr: `setting "novalue" of entry "bad"`},
		{value: "bad==1", wantErr: `setting "=1" of entry "bad"`},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			e := system.Entries{}
			err := e.Set(tt.value)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				assert.Empty(t, e, "nothing is set from a bad value")
				return
			}
			require.NoError(t, err)
			name, _, _ := strings.Cut(tt.value, "=")
			assert.Equal(t, tt.want, e[name])
			assert.Contains(t, e.String(), name)
		})
	}
}
