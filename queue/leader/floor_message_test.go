package leader

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
)

// TestFloorErrorAdviceWorks: the error refusing a request timeout under
// 100ms tells the user what to lengthen. When the binding term is the
// margin (LeaseDuration - RenewDeadline - RetryPeriod), lengthening the
// renew deadline, as the message advises, only shrinks the margin: no
// longer renew deadline is accepted.
func TestFloorErrorAdviceWorks(t *testing.T) {
	cfg := Config{Client: fake.NewClientset(), Namespace: "ops", Name: "x",
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 900 * time.Millisecond}
	_, err := cfg.complete()
	if err == nil {
		t.Fatal("config accepted")
	}
	if !strings.Contains(err.Error(), "lengthen the lease duration or the renew deadline") {
		t.Skipf("message changed: %v", err)
	}
	for rd := cfg.RenewDeadline + 50*time.Millisecond; rd < cfg.LeaseDuration; rd += 50 * time.Millisecond {
		c := cfg
		c.RenewDeadline = rd
		if _, err := c.complete(); err == nil {
			return // the advice works
		}
	}
	t.Errorf("the error says %q, but no longer renew deadline (up to the lease duration %s) is accepted: lengthening it shrinks the margin that binds here; the advice should be to lengthen the lease duration or shorten the renew deadline or retry period", err, cfg.LeaseDuration)
}
