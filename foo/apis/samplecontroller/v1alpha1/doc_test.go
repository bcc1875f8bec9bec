package v1alpha1_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ctrlkit/ctrlkit/foo/apis/samplecontroller/v1alpha1"
)

// newScheme is the package documentation's example; it hands the scheme to
// use.
func newScheme(use func(*runtime.Scheme)) error {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	use(scheme)
	return nil
}

func TestPackageDocExample(t *testing.T) {
	require.NoError(t, newScheme(func(scheme *runtime.Scheme) {
		assert.True(t, scheme.Recognizes(v1alpha1.SchemeGroupVersion.WithKind("Foo")))
	}))
}
