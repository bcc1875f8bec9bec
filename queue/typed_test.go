package queue_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/tools/go/packages"
)

// snippet is a file of package queue that binds an EnqueueHandler of the
// given type to an informer of Deployments, as a user of the package would
// write it: fmt fills in the function's name and the handler's type. (In
// package queue, On and New need no qualifier: a file cannot import the
// package it belongs to.)
const snippet = `package queue

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
)

var (
	_ = appsv1.Deployment{}
	_ = corev1.ConfigMap{}
)

func %s(factory informers.SharedInformerFactory, ctrl *Controller[cache.ObjectName]) error {
	return ctrl.Watch(On(factory.Apps().V1().Deployments().TypedInformer(), informer.EnqueueHandler[%s](ctrl)))
}
`

// On binds a handler to an informer of the same object type only: a
// handler of ConfigMaps bound to an informer of Deployments does not
// compile, while the same code with a handler of Deployments does.
//
// Package queue is type-checked with two snippets added as overlays
// (nothing is written to disk), one mismatched and one corrected; both are
// checked in one load, as an overlay makes go/packages type-check every
// dependency from source.
func TestOnMismatchDoesNotCompile(t *testing.T) {
	_, self, _, ok := runtime.Caller(0)
	require.True(t, ok, "the path of this file")
	dir := filepath.Dir(self)
	snippets := []struct{ path, fn, handlerType string }{
		{path: filepath.Join(dir, "zz_mismatch_snippet.go"), fn: "zzMismatched", handlerType: "*corev1.ConfigMap"},
		{path: filepath.Join(dir, "zz_corrected_snippet.go"), fn: "zzCorrected", handlerType: "*appsv1.Deployment"},
	}
	mismatched := snippets[0].path
	cfg := &packages.Config{
		Mode:    packages.NeedName | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax,
		Dir:     dir,
		Tests:   false,
		Overlay: map[string][]byte{},
	}
	for _, s := range snippets {
		cfg.Overlay[s.path] = fmt.Appendf(nil, snippet, s.fn, s.handlerType)
	}
	pkgs, err := packages.Load(cfg, ".")
	require.NoError(t, err)
	require.Len(t, pkgs, 1)
	pkg := pkgs[0]
	require.Equal(t, "github.com/ctrlkit/ctrlkit/queue", pkg.PkgPath)
	require.NotNil(t, pkg.Types, "package queue was not type-checked")
	var files []string
	for _, f := range pkg.Syntax {
		files = append(files, pkg.Fset.Position(f.Package).Filename)
	}
	for _, s := range snippets {
		require.Contains(t, files, s.path, "the snippet is not part of the package")
		require.NotNil(t, pkg.Types.Scope().Lookup(s.fn), "the snippet's function was not declared")
	}

	// The package has exactly one type error, the mismatch: the corrected
	// snippet, the same code but for the handler's type, has none. (go
	// list, which compiles the package for its export data, reports the
	// compiler's view of the same error.)
	var typeErrs []packages.Error
	for _, e := range pkg.Errors {
		assert.NotContains(t, e.Error(), "zz_corrected_snippet.go", "the corrected snippet has an error")
		switch e.Kind {
		case packages.TypeError:
			typeErrs = append(typeErrs, e)
		case packages.ListError:
			assert.Contains(t, e.Msg, "zz_mismatch_snippet.go", "an error other than the mismatch")
		default:
			t.Errorf("unexpected error: %v", e)
		}
	}
	require.Len(t, typeErrs, 1, "errors: %v", pkg.Errors)
	e := typeErrs[0]
	assert.True(t, strings.HasPrefix(e.Pos, mismatched+":"), "the error is not in the mismatched snippet: %v", e)
	assert.Contains(t, e.Msg, "TypedResourceEventHandler")
	// go/types qualifies the types by package path when several packages
	// named v1 are in scope, by package name otherwise.
	assert.Regexp(t, `\*("k8s.io/api/core/v1"|v1)\.ConfigMap\b`, e.Msg)
	assert.Regexp(t, `\*("k8s.io/api/apps/v1"|v1)\.Deployment\b`, e.Msg)
	t.Logf("the mismatch: %v", e)
}
