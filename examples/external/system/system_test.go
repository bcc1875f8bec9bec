package system_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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
