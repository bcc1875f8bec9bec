package reported

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/rest"
)

type members []string

func (m *members) Set(name string, cfg *rest.Config) { *m = append(*m, "set "+name+" "+cfg.Host) }
func (m *members) Delete(name string)                { *m = append(*m, "delete "+name) }
func (m *members) Synced()                           { *m = append(*m, "synced") }

func kubeconfig(host string) []byte {
	return fmt.Appendf(nil, `{"apiVersion": "v1", "kind": "Config", "current-context": "c",
		"clusters": [{"name": "c", "cluster": {"server": %q}}], "contexts": [{"name": "c", "context": {"cluster": "c"}}]}`, host)
}

func TestKubeconfigs(t *testing.T) {
	var k Kubeconfigs
	m := &members{}
	steps := []struct {
		name       string
		do         func() error
		want       []string
		wantErrMsg string
	}{
		{name: "new", do: func() error { return k.Set(m, "a", kubeconfig("https://a")) }, want: []string{"set a https://a"}},
		{name: "unchanged", do: func() error { return k.Set(m, "a", kubeconfig("https://a")) }},
		{name: "changed", do: func() error { return k.Set(m, "a", kubeconfig("https://a2")) }, want: []string{"set a https://a2"}},
		{name: "unreadable", do: func() error { return k.Set(m, "a", []byte("{not json")) }, want: []string{"delete a"}, wantErrMsg: "cannot read the kubeconfig"},
		// The same refusal is reported once: no new event, no new log.
		{name: "unreadable, unchanged", do: func() error { return k.Set(m, "a", []byte("{not json")) }},
		{name: "unreadable the same way", do: func() error { return k.Set(m, "a", []byte("{not  json")) }},
		{name: "refused otherwise", do: func() error { return k.Set(m, "a", kubeconfig("http://a")) }, want: []string{"delete a"}, wantErrMsg: `server http://a without TLS: not allowed`},
		{name: "refused by the caller", do: func() error { return k.Refuse(m, "a", errors.New("no access")) }, want: []string{"delete a"}, wantErrMsg: "no access"},
		{name: "refused by the caller again", do: func() error { return k.Refuse(m, "a", errors.New("no access")) }},
		{name: "empty", do: func() error { return k.Set(m, "b", nil) }, want: []string{"delete b"}, wantErrMsg: "the kubeconfig is empty"},
		{name: "back", do: func() error { return k.Set(m, "a", kubeconfig("https://a2")) }, want: []string{"set a https://a2"}},
		{name: "deleted", do: func() error { k.Delete(m, "a"); return nil }, want: []string{"delete a"}},
		{name: "again after delete", do: func() error { return k.Set(m, "a", kubeconfig("https://a2")) }, want: []string{"set a https://a2"}},
	}
	for _, step := range steps {
		before := len(*m)
		err := step.do()
		if step.wantErrMsg != "" {
			assert.ErrorContains(t, err, step.wantErrMsg, step.name)
		} else {
			assert.NoError(t, err, step.name)
		}
		var got []string
		if len(*m) > before {
			got = (*m)[before:]
		}
		assert.Equal(t, step.want, got, step.name)
	}
}

// Refused lists the members whose last report was a refusal, with the
// error they were refused with; a member set or deleted leaves it.
func TestRefused(t *testing.T) {
	var k Kubeconfigs
	m := &members{}
	assert.Empty(t, k.Refused())
	noAccess := errors.New("no access")
	assert.Error(t, k.Refuse(m, "a", noAccess))
	assert.Error(t, k.Set(m, "b", []byte("{not json")))
	assert.Error(t, k.Refuse(m, "c", noAccess))
	assert.NoError(t, k.Set(m, "d", kubeconfig("https://d")))
	refused := k.Refused()
	assert.Len(t, refused, 3)
	assert.Same(t, noAccess, refused["a"])
	assert.ErrorContains(t, refused["b"], "cannot read the kubeconfig")

	assert.NoError(t, k.Set(m, "a", kubeconfig("https://a")))
	k.Delete(m, "c")
	refused["x"] = noAccess // the map is the caller's
	assert.Equal(t, []string{"b"}, keys(k.Refused()))
}

func keys(m map[string]error) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
