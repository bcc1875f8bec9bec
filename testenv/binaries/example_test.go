package binaries_test

import (
	"context"
	"fmt"

	"github.com/ctrlkit/ctrlkit/testenv/binaries"
)

// printKubectl is the package documentation's example.
func printKubectl(ctx context.Context) error {
	set, err := binaries.Ensure(ctx, binaries.Options{})
	if err != nil {
		return err
	}
	fmt.Println(set.Kubectl) // ~/.cache/ctrlkit-testenv/linux-amd64/kube-v1.37.1-.../kubectl
	return nil
}

// Building (on the first call on a machine) or finding the binaries.
func ExampleEnsure() {
	if err := printKubectl(context.Background()); err != nil {
		fmt.Println(err)
	}
}
