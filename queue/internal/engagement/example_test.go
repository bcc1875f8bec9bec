package engagement_test

import (
	"context"
	"fmt"

	"github.com/ctrlkit/ctrlkit/queue/internal/engagement"
)

func Example() {
	ctx := context.Background()
	gate := newClaimer("east") // a shard.Gate in a sharded Fleet
	reconcile := func(ctx context.Context, name string) { fmt.Println("reconciled in", name, ctx.Err()) }

	set := engagement.New[string](gate, func(a, b string) bool { return a == b }, errLeft)
	set.Want("east", "config-1")
	started, _ := set.Converge(ctx)
	for _, e := range started {
		if e.Ready() { // engaged: its informers synced
			work, release, ok := e.Claim(ctx)
			if ok {
				reconcile(work, e.Name())
				release()
			}
		}
		drained, final := e.Drain() // stopping: it stopped answering, or e.Context() ended
		<-drained
		if final {
			e.End()
		}
	}

	set.Unwant("east")
	_, forgotten := set.Converge(ctx)
	fmt.Println("forgotten:", forgotten, "claims left:", gate.held["east"])
	e := set.Get("east")
	_, final := e.Drain()
	e.End()
	_, forgotten = set.Converge(ctx)
	fmt.Println("final:", final, "forgotten:", forgotten, "claims left:", gate.held["east"])
	// Output:
	// reconciled in east <nil>
	// forgotten: [] claims left: 1
	// final: true forgotten: [east] claims left: 0
}
