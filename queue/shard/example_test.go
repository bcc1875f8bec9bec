package shard_test

import (
	"fmt"

	"github.com/ctrlkit/ctrlkit/queue/shard"
)

// Every replica computes the same owner for a key from the member list
// alone. When a fourth member joins, the keys that move go to it, and only
// those move.
func ExampleAssign() {
	three := []string{"foo-a", "foo-b", "foo-c"}
	four := []string{"foo-a", "foo-b", "foo-c", "foo-d"}
	for i := range 8 {
		key := fmt.Sprintf("default/foo-%d", i)
		fmt.Printf("%s  %s -> %s\n", key, shard.Assign(three, key), shard.Assign(four, key))
	}
	// Output:
	// default/foo-0  foo-c -> foo-c
	// default/foo-1  foo-b -> foo-d
	// default/foo-2  foo-a -> foo-d
	// default/foo-3  foo-c -> foo-c
	// default/foo-4  foo-a -> foo-a
	// default/foo-5  foo-b -> foo-b
	// default/foo-6  foo-c -> foo-c
	// default/foo-7  foo-b -> foo-b
}
