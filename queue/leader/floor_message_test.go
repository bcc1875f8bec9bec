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
	// The margin binds here: the advice must name it, and not ask for
	// a longer renew deadline, which only shrinks it.
	if !strings.Contains(err.Error(), "half of lease duration - renew deadline - retry period") ||
		!strings.Contains(err.Error(), "shorten the renew deadline or the retry period") {
		t.Errorf("the error says %q: it does not name the margin that binds here, nor advise shortening the renew deadline or retry period", err)
	}
	c := cfg
	c.RenewDeadline -= 200 * time.Millisecond
	if _, err := c.complete(); err != nil {
		t.Errorf("a shorter renew deadline, as advised, is refused too: %v", err)
	}
}
