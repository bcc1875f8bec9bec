package webhook_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a server, a certificate loop or a
// client connection outlives its test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
