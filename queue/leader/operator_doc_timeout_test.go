package leader

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestOperatorDocStatesTheLeaderRequestTimeout: docs/operator.md, under
// "Leader election (queue/leader)", states after how long each request of
// the Lease is abandoned with the defaults; it must be what the code does
// (bounded by half the margin, so that a late answer cannot make two
// leaders; docs/design.md's table gives the same figure).
func TestOperatorDocStatesTheLeaderRequestTimeout(t *testing.T) {
	b, err := os.ReadFile("../../docs/operator.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(b)), " ")
	i := strings.Index(doc, "Leader election (`queue/leader`)")
	if i < 0 {
		t.Fatal("no leader election paragraph in docs/operator.md")
	}
	m := regexp.MustCompile(`each request of the Lease is abandoned after ([0-9.]+ ?m?s)`).FindStringSubmatch(doc[i:])
	if m == nil {
		t.Fatal("docs/operator.md does not state the request timeout")
	}
	stated, err := time.ParseDuration(strings.ReplaceAll(m[1], " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	got := requestTimeout(Config{LeaseDuration: DefaultLeaseDuration, RenewDeadline: DefaultRenewDeadline, RetryPeriod: DefaultRetryPeriod})
	if got != stated {
		t.Errorf("docs/operator.md says a leader's Lease request is abandoned after %s with the defaults; the code abandons it after %s", stated, got)
	}
}
