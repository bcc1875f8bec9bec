package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ctrlkit/ctrlkit/examples/bucket/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// timeout bounds every wait of these tests for something to happen.
const timeout = 10 * time.Second

var (
	euWest = store.Spec{Region: "eu-west-1"}
	usEast = store.Spec{Region: "us-east-1", Versioning: true}
)

// newServer returns a Server on file, closed at the end of the test.
func newServer(t *testing.T, file string) *store.Server {
	t.Helper()
	srv, err := store.NewServer(file)
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	return srv
}

// serve serves srv on ln (or on a new loopback listener when ln is nil)
// until stop is called, or the test ends.
func serve(t *testing.T, srv *store.Server, ln net.Listener) (ts *httptest.Server, stop func()) {
	t.Helper()
	ts = httptest.NewUnstartedServer(srv)
	if ln != nil {
		require.NoError(t, ts.Listener.Close())
		ts.Listener = ln
	}
	ts.Start()
	stop = func() {
		srv.Close() // wakes the long polls, which the HTTP server waits for
		ts.Close()
	}
	t.Cleanup(stop)
	return ts, stop
}

// start serves a new Server on a data file of its own.
func start(t *testing.T) (*store.Server, *httptest.Server, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "buckets.json")
	srv := newServer(t, file)
	ts, _ := serve(t, srv, nil)
	return srv, ts, file
}

// request sends a request to url, with the headers of header (name, value,
// name, value, ...), and returns the code, the headers and the body of the
// answer.
func request(t *testing.T, method, url, body string, header ...string) (int, http.Header, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(data)
}

func ptr(s string) *string { return &s }

// receive returns the next batch of ch, failing the test when none comes in
// time or ch is closed.
func receive(t *testing.T, ch <-chan []string) []string {
	t.Helper()
	select {
	case names, ok := <-ch:
		require.True(t, ok, "the channel of changes closed")
		return names
	case <-time.After(timeout):
		require.FailNow(t, "no change arrived")
		return nil
	}
}

// listenOn listens on addr, trying again for a while when the port is not
// free yet.
func listenOn(t *testing.T, addr string) net.Listener {
	t.Helper()
	var ln net.Listener
	require.Eventually(t, func() bool {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err == nil
	}, timeout, 10*time.Millisecond, "listening on %s again", addr)
	return ln
}

// closedAddress returns a loopback address nothing listens on.
func closedAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func TestCheckName(t *testing.T) {
	tests := []struct {
		name    string
		wantErr string
	}{
		{name: "a"},
		{name: "photos-2024"},
		{name: "0"},
		{name: strings.Repeat("a", 63)},
		{name: "", wantErr: "empty"},
		{name: strings.Repeat("a", 64), wantErr: "longer than 63"},
		{name: "-a", wantErr: "start and end"},
		{name: "a-", wantErr: "start and end"},
		{name: "Photos", wantErr: "start and end"},
		{name: "a_b", wantErr: "only lowercase letters, digits and '-'"},
		{name: "a.b", wantErr: "only lowercase letters, digits and '-'"},
		{name: "a/b", wantErr: "only lowercase letters, digits and '-'"},
		{name: "aBc", wantErr: "only lowercase letters, digits and '-'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := store.CheckName(tt.name)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestHandler(t *testing.T) {
	a1 := store.Bucket{Name: "a", Spec: euWest, Version: 1}
	seeded := []store.Bucket{a1}
	const a1JSON = `{"name":"a","spec":{"region":"eu-west-1","versioning":false},"version":1}`
	long := strings.Repeat("b", 63)
	tests := []struct {
		name, method, path, body string
		owner                    *string // the Bucket-Owner header, when set
		wantCode                 int
		wantBody                 string // the JSON of the answer, when set
		wantErr                  string // in the error message, when set
		wantReason               string // of the error
		wantAllow                string
		wantAfter                []store.Bucket // the buckets after the request
	}{
		{name: "get", method: "GET", path: "/buckets/a", wantCode: 200, wantBody: a1JSON, wantAfter: seeded},
		{name: "get missing", method: "GET", path: "/buckets/b", wantCode: 404, wantErr: `no bucket "b"`, wantReason: "NoSuchBucket", wantAfter: seeded},
		{name: "list", method: "GET", path: "/buckets", wantCode: 200, wantBody: "[" + a1JSON + "]", wantAfter: seeded},
		{
			name: "create", method: "PUT", path: "/buckets/b", body: `{"region":"us-east-1","versioning":true}`,
			wantCode: 201, wantBody: `{"name":"b","spec":{"region":"us-east-1","versioning":true},"version":1}`,
			wantAfter: []store.Bucket{a1, {Name: "b", Spec: usEast, Version: 1}},
		},
		{
			name: "create with the longest name", method: "PUT", path: "/buckets/" + long, body: `{"region":"eu-west-1"}`,
			wantCode: 201, wantAfter: []store.Bucket{a1, {Name: long, Spec: euWest, Version: 1}},
		},
		{
			name: "replace", method: "PUT", path: "/buckets/a", body: `{"region":"us-east-1","versioning":true}`,
			wantCode: 200, wantBody: `{"name":"a","spec":{"region":"us-east-1","versioning":true},"version":2}`,
			wantAfter: []store.Bucket{{Name: "a", Spec: usEast, Version: 2}},
		},
		{name: "put of the same spec", method: "PUT", path: "/buckets/a", body: `{"region":"eu-west-1"}`, wantCode: 200, wantBody: a1JSON, wantAfter: seeded},
		{name: "delete", method: "DELETE", path: "/buckets/a", wantCode: 204, wantAfter: []store.Bucket{}},
		{name: "delete missing", method: "DELETE", path: "/buckets/b", wantCode: 404, wantErr: `no bucket "b"`, wantReason: "NoSuchBucket", wantAfter: seeded},

		{
			name: "create of an owner", method: "PUT", path: "/buckets/b", body: `{"region":"us-east-1","versioning":true}`, owner: ptr("me"),
			wantCode: 201, wantBody: `{"name":"b","owner":"me","spec":{"region":"us-east-1","versioning":true},"version":1}`,
			wantAfter: []store.Bucket{a1, {Name: "b", Owner: "me", Spec: usEast, Version: 1}},
		},
		{
			name: "replace of another's", method: "PUT", path: "/buckets/a", body: `{"region":"us-east-1"}`, owner: ptr("me"),
			wantCode: 409, wantErr: `bucket "a" is not owned by "me"`, wantReason: "NotOwner", wantAfter: seeded,
		},
		{
			name: "put of another's spec", method: "PUT", path: "/buckets/a", body: `{"region":"eu-west-1"}`, owner: ptr("me"),
			wantCode: 409, wantReason: "NotOwner", wantAfter: seeded,
		},
		{name: "delete of another's", method: "DELETE", path: "/buckets/a", owner: ptr("me"), wantCode: 409, wantReason: "NotOwner", wantAfter: seeded},
		{name: "delete missing of an owner", method: "DELETE", path: "/buckets/b", owner: ptr("me"), wantCode: 404, wantReason: "NoSuchBucket", wantAfter: seeded},
		{name: "put of an empty owner", method: "PUT", path: "/buckets/b", body: `{"region":"eu-west-1"}`, owner: ptr(""), wantCode: 400, wantErr: "Bucket-Owner", wantAfter: seeded},
		{name: "delete of an empty owner", method: "DELETE", path: "/buckets/a", owner: ptr(""), wantCode: 400, wantErr: "Bucket-Owner", wantAfter: seeded},

		{name: "get of an empty name", method: "GET", path: "/buckets/", wantCode: 400, wantErr: "empty", wantAfter: seeded},
		{name: "get of a bad name", method: "GET", path: "/buckets/A", wantCode: 400, wantErr: `bucket name "A"`, wantAfter: seeded},
		{name: "put of a bad name", method: "PUT", path: "/buckets/-a", body: `{"region":"eu-west-1"}`, wantCode: 400, wantErr: "start and end", wantAfter: seeded},
		{name: "put of a long name", method: "PUT", path: "/buckets/" + long + "b", body: `{}`, wantCode: 400, wantErr: "longer than 63", wantAfter: seeded},
		{name: "put of a name with a slash", method: "PUT", path: "/buckets/a%2Fb", body: `{}`, wantCode: 400, wantErr: `"a/b"`, wantAfter: seeded},
		{name: "put under a bucket", method: "PUT", path: "/buckets/a/b", body: `{}`, wantCode: 400, wantErr: `"a/b"`, wantAfter: seeded},
		{name: "delete of a bad name", method: "DELETE", path: "/buckets/a_b", wantCode: 400, wantErr: `"a_b"`, wantAfter: seeded},

		{name: "body not JSON", method: "PUT", path: "/buckets/a", body: `region=x`, wantCode: 400, wantErr: "body is not a spec", wantAfter: seeded},
		{name: "empty body", method: "PUT", path: "/buckets/a", wantCode: 400, wantErr: "body is not a spec", wantAfter: seeded},
		{name: "field of the wrong type", method: "PUT", path: "/buckets/a", body: `{"region":1}`, wantCode: 400, wantErr: "body is not a spec", wantAfter: seeded},
		{name: "unknown field", method: "PUT", path: "/buckets/a", body: `{"regoin":"x"}`, wantCode: 400, wantErr: "regoin", wantAfter: seeded},
		{name: "two values", method: "PUT", path: "/buckets/a", body: `{} {}`, wantCode: 400, wantErr: "more than one JSON value", wantAfter: seeded},
		{
			name: "body too large", method: "PUT", path: "/buckets/a", body: `{"region":"` + strings.Repeat("x", 1<<20) + `"}`,
			wantCode: 413, wantErr: "larger than", wantAfter: seeded,
		},

		{name: "post of a bucket", method: "POST", path: "/buckets/a", body: `{}`, wantCode: 405, wantErr: "POST", wantAllow: "GET, PUT, DELETE", wantAfter: seeded},
		{name: "put of the list", method: "PUT", path: "/buckets", body: `{}`, wantCode: 405, wantErr: "PUT", wantAllow: "GET", wantAfter: seeded},
		{name: "post of changes", method: "POST", path: "/changes", wantCode: 405, wantErr: "POST", wantAllow: "GET", wantAfter: seeded},
		{name: "unknown endpoint", method: "GET", path: "/objects", wantCode: 404, wantErr: "no endpoint /objects", wantReason: "", wantAfter: seeded},

		{name: "changes", method: "GET", path: "/changes?after=0&wait=0s", wantCode: 200, wantBody: `{"seq":1,"names":["a"]}`, wantAfter: seeded},
		{name: "changes, none yet", method: "GET", path: "/changes?after=1&wait=1ms", wantCode: 200, wantBody: `{"seq":1,"names":[]}`, wantAfter: seeded},
		{name: "changes after the latest", method: "GET", path: "/changes?after=7&wait=1h", wantCode: 200, wantBody: `{"seq":1,"names":["a"]}`, wantAfter: seeded},
		{name: "changes after a bad number", method: "GET", path: "/changes?after=x", wantCode: 400, wantErr: `after="x"`, wantAfter: seeded},
		{name: "changes after a negative number", method: "GET", path: "/changes?after=-1", wantCode: 400, wantErr: `after="-1"`, wantAfter: seeded},
		{name: "changes with a bad wait", method: "GET", path: "/changes?wait=soon", wantCode: 400, wantErr: `wait="soon"`, wantAfter: seeded},
		{name: "changes with a negative wait", method: "GET", path: "/changes?wait=-1s", wantCode: 400, wantErr: `wait="-1s"`, wantAfter: seeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ts, _ := start(t)
			c := store.NewClient(ts.URL, nil)
			_, err := c.Put(t.Context(), "a", euWest)
			require.NoError(t, err)

			var owner []string
			if tt.owner != nil {
				owner = []string{store.OwnerHeader, *tt.owner}
			}
			code, header, body := request(t, tt.method, ts.URL+tt.path, tt.body, owner...)
			assert.Equal(t, tt.wantCode, code, body)
			if code != http.StatusNoContent {
				assert.Equal(t, "application/json", header.Get("Content-Type"))
			}
			if tt.wantBody != "" {
				assert.JSONEq(t, tt.wantBody, body)
			}
			if code >= 400 {
				var e struct{ Error, Reason string }
				require.NoError(t, json.Unmarshal([]byte(body), &e), body)
				assert.Contains(t, e.Error, tt.wantErr)
				assert.Equal(t, tt.wantReason, e.Reason, "reason")
			}
			assert.Equal(t, tt.wantAllow, header.Get("Allow"))
			after, err := c.List(t.Context())
			require.NoError(t, err)
			assert.Equal(t, tt.wantAfter, after)
		})
	}
}

func TestClient(t *testing.T) {
	_, ts, _ := start(t)
	c := store.NewClient(ts.URL+"/", nil)
	ctx := t.Context()

	list, err := c.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, list)
	_, found, err := c.Get(ctx, "b")
	require.NoError(t, err)
	assert.False(t, found)

	steps := []struct {
		name string
		spec store.Spec
		want store.Bucket
	}{
		{name: "b", spec: euWest, want: store.Bucket{Name: "b", Spec: euWest, Version: 1}},
		{name: "a", spec: euWest, want: store.Bucket{Name: "a", Spec: euWest, Version: 1}},
		{name: "b", spec: usEast, want: store.Bucket{Name: "b", Spec: usEast, Version: 2}},
		{name: "b", spec: usEast, want: store.Bucket{Name: "b", Spec: usEast, Version: 2}},
		{name: "b", spec: euWest, want: store.Bucket{Name: "b", Spec: euWest, Version: 3}},
	}
	for _, s := range steps {
		got, err := c.Put(ctx, s.name, s.spec)
		require.NoError(t, err)
		assert.Equal(t, s.want, got, "put %s %+v", s.name, s.spec)
		got, found, err := c.Get(ctx, s.name)
		require.NoError(t, err)
		assert.True(t, found)
		assert.Equal(t, s.want, got, "get %s", s.name)
	}
	list, err = c.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, []store.Bucket{{Name: "a", Spec: euWest, Version: 1}, {Name: "b", Spec: euWest, Version: 3}}, list)

	require.NoError(t, c.Delete(ctx, "b"))
	require.NoError(t, c.Delete(ctx, "b"), "a bucket already gone")
	_, found, err = c.Get(ctx, "b")
	require.NoError(t, err)
	assert.False(t, found)
	got, err := c.Put(ctx, "b", usEast)
	require.NoError(t, err)
	assert.Equal(t, int64(1), got.Version, "a bucket made again starts at version 1")

	for name, call := range map[string]func(name string) error{
		"get":    func(name string) error { _, _, err := c.Get(ctx, name); return err },
		"put":    func(name string) error { _, err := c.Put(ctx, name, euWest); return err },
		"delete": func(name string) error { return c.Delete(ctx, name) },
	} {
		for _, bad := range []string{"Bad", "a/b", "a?b", ""} {
			err := call(bad)
			se, ok := errors.AsType[*store.StatusError](err)
			require.True(t, ok, "%s %q: %v", name, bad, err)
			assert.Equal(t, http.StatusBadRequest, se.Code, "%s %q", name, bad)
			assert.Contains(t, se.Message, "bucket name", "%s %q", name, bad)
			assert.Contains(t, err.Error(), "400 Bad Request", "%s %q", name, bad)
		}
	}
}

// Writes on behalf of an owner touch only that owner's buckets: the store
// decides, so that a bucket created by someone else (a person, another
// operator, an earlier Bucket of the same name) is never overwritten or
// deleted, however the writers race.
func TestOwnership(t *testing.T) {
	ctx := t.Context()
	// Every step starts from bucket "theirs" owned by "them", "mine" owned by
	// "me" and "nobodys", made by a write without an owner.
	tests := []struct {
		name    string
		do      func(c *store.Client) (store.Bucket, error)
		want    store.Bucket // the answer, when there is no error
		wantErr error        // matched with errors.Is, when set
		gone    string       // the bucket the step deletes
		changed store.Bucket // the bucket the step creates or changes
	}{
		{
			name: "create", do: func(c *store.Client) (store.Bucket, error) { return c.PutAs(ctx, "me", "new", euWest) },
			want:    store.Bucket{Name: "new", Owner: "me", Spec: euWest, Version: 1},
			changed: store.Bucket{Name: "new", Owner: "me", Spec: euWest, Version: 1},
		},
		{
			name: "replace my own", do: func(c *store.Client) (store.Bucket, error) { return c.PutAs(ctx, "me", "mine", usEast) },
			want:    store.Bucket{Name: "mine", Owner: "me", Spec: usEast, Version: 2},
			changed: store.Bucket{Name: "mine", Owner: "me", Spec: usEast, Version: 2},
		},
		{
			name: "put of my own spec", do: func(c *store.Client) (store.Bucket, error) { return c.PutAs(ctx, "me", "mine", euWest) },
			want: store.Bucket{Name: "mine", Owner: "me", Spec: euWest, Version: 1},
		},
		{
			name: "replace theirs", do: func(c *store.Client) (store.Bucket, error) { return c.PutAs(ctx, "me", "theirs", usEast) },
			wantErr: store.ErrNotOwner,
		},
		{
			name: "put of their spec", do: func(c *store.Client) (store.Bucket, error) { return c.PutAs(ctx, "me", "theirs", euWest) },
			wantErr: store.ErrNotOwner,
		},
		{
			name: "replace nobody's", do: func(c *store.Client) (store.Bucket, error) { return c.PutAs(ctx, "me", "nobodys", usEast) },
			wantErr: store.ErrNotOwner,
		},
		{
			name: "a put without an owner keeps the owner", do: func(c *store.Client) (store.Bucket, error) { return c.Put(ctx, "theirs", usEast) },
			want:    store.Bucket{Name: "theirs", Owner: "them", Spec: usEast, Version: 2},
			changed: store.Bucket{Name: "theirs", Owner: "them", Spec: usEast, Version: 2},
		},
		{
			name: "delete my own", do: func(c *store.Client) (store.Bucket, error) { return store.Bucket{}, c.DeleteAs(ctx, "me", "mine") },
			gone: "mine",
		},
		{name: "delete a missing one", do: func(c *store.Client) (store.Bucket, error) { return store.Bucket{}, c.DeleteAs(ctx, "me", "new") }},
		{
			name: "delete theirs", do: func(c *store.Client) (store.Bucket, error) { return store.Bucket{}, c.DeleteAs(ctx, "me", "theirs") },
			wantErr: store.ErrNotOwner,
		},
		{
			name: "delete nobody's", do: func(c *store.Client) (store.Bucket, error) { return store.Bucket{}, c.DeleteAs(ctx, "me", "nobodys") },
			wantErr: store.ErrNotOwner,
		},
		{
			name: "a delete without an owner deletes anyone's", do: func(c *store.Client) (store.Bucket, error) { return store.Bucket{}, c.Delete(ctx, "theirs") },
			gone: "theirs",
		},
		{name: "put without an owner", do: func(c *store.Client) (store.Bucket, error) { return c.PutAs(ctx, "", "new", euWest) }, wantErr: store.ErrNoOwner},
		{name: "delete without an owner", do: func(c *store.Client) (store.Bucket, error) { return store.Bucket{}, c.DeleteAs(ctx, "", "mine") }, wantErr: store.ErrNoOwner},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ts, _ := start(t)
			c := store.NewClient(ts.URL, nil)
			_, err := c.PutAs(ctx, "them", "theirs", euWest)
			require.NoError(t, err)
			_, err = c.PutAs(ctx, "me", "mine", euWest)
			require.NoError(t, err)
			_, err = c.Put(ctx, "nobodys", euWest)
			require.NoError(t, err)
			before, err := c.List(ctx)
			require.NoError(t, err)

			got, err := tt.do(c)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
				assert.Equal(t, tt.want, got)
			}
			var want []store.Bucket
			for _, b := range before {
				if b.Name != tt.gone && b.Name != tt.changed.Name {
					want = append(want, b)
				}
			}
			if tt.changed.Name != "" {
				want = append(want, tt.changed)
			}
			after, err := c.List(ctx)
			require.NoError(t, err)
			assert.ElementsMatch(t, want, after)
		})
	}
}

// Of writers of different owners racing to create a bucket, exactly one
// creates it; the others are told it is not theirs.
func TestOwnershipRace(t *testing.T) {
	_, ts, _ := start(t)
	c := store.NewClient(ts.URL, nil)
	owners := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	errs := make(chan error, len(owners))
	startLine := make(chan struct{})
	for _, owner := range owners {
		go func() {
			<-startLine
			_, err := c.PutAs(context.Background(), owner, "contested", store.Spec{Region: owner})
			errs <- err
		}()
	}
	close(startLine)
	won := 0
	for range owners {
		err := <-errs
		if err == nil {
			won++
			continue
		}
		assert.ErrorIs(t, err, store.ErrNotOwner)
	}
	assert.Equal(t, 1, won, "writers that created the bucket")
	b, found, err := c.Get(t.Context(), "contested")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, b.Owner, b.Spec.Region, "the bucket holds its creator's spec")
	assert.Equal(t, int64(1), b.Version, "written once")
}

func TestClientErrors(t *testing.T) {
	answer := func(code int, body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
			_, _ = io.WriteString(w, body)
		})
	}
	tests := []struct {
		name     string
		handler  http.Handler
		wantCode int    // of the StatusError, when there is one
		wantErr  string // in the error
	}{
		{name: "JSON error", handler: answer(503, `{"error":"down for maintenance"}`), wantCode: 503, wantErr: "503 Service Unavailable: down for maintenance"},
		{name: "text error", handler: answer(502, "upstream broke\n"), wantCode: 502, wantErr: "502 Bad Gateway: upstream broke"},
		{name: "empty error", handler: answer(500, ""), wantCode: 500, wantErr: "500 Internal Server Error: Internal Server Error"},
		{name: "JSON without a message", handler: answer(409, `{}`), wantCode: 409, wantErr: "409 Conflict: {}"},
		{name: "not modified", handler: answer(304, ""), wantCode: 304, wantErr: "304 Not Modified"},
		{name: "answer not JSON", handler: answer(200, "<html>"), wantErr: "decoding the answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(tt.handler)
			t.Cleanup(ts.Close)
			c := store.NewClient(ts.URL, ts.Client())
			ctx := t.Context()
			_, _, errGet := c.Get(ctx, "a")
			_, errPut := c.Put(ctx, "a", euWest)
			_, errList := c.List(ctx)
			errDelete := c.Delete(ctx, "a")
			for name, err := range map[string]error{"get": errGet, "put": errPut, "list": errList, "delete": errDelete} {
				if name == "delete" && tt.wantCode == 0 {
					assert.NoError(t, err, "delete reads no answer")
					continue
				}
				require.Error(t, err, name)
				assert.Contains(t, err.Error(), tt.wantErr, name)
				se, ok := errors.AsType[*store.StatusError](err)
				assert.Equal(t, tt.wantCode != 0, ok, "%s: a StatusError", name)
				if ok {
					assert.Equal(t, tt.wantCode, se.Code, name)
				}
			}
		})
	}
}

// A 404 means "no such bucket" only when the store says so: the 404 of a
// wrong base URL, of a proxy or of an older store is an error, so that a
// cleanup is not taken for done while the bucket is still there.
func TestClientNotFound(t *testing.T) {
	_, live, _ := start(t)
	tests := []struct {
		name    string
		handler http.Handler // answers every request; nil: the real store under a wrong base path
		wantErr string       // empty: the bucket counts as gone
	}{
		{name: "no such bucket", handler: answerNotFound(`{"error":"no bucket \"a\"","reason":"NoSuchBucket"}`)},
		{name: "plain 404", handler: http.NotFoundHandler(), wantErr: "404 Not Found: 404 page not found"},
		{name: "JSON 404 without a reason", handler: answerNotFound(`{"error":"no route to bucket a"}`), wantErr: "404 Not Found: no route to bucket a"},
		{name: "404 of another reason", handler: answerNotFound(`{"error":"gone","reason":"NoSuchRoute"}`), wantErr: "404 Not Found: gone"},
		{name: "the store's own unknown endpoint", wantErr: "no endpoint /v2/buckets/a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := live.URL + "/v2"
			if tt.handler != nil {
				ts := httptest.NewServer(tt.handler)
				t.Cleanup(ts.Close)
				base = ts.URL
			}
			c := store.NewClient(base, nil)
			ctx := t.Context()
			_, found, errGet := c.Get(ctx, "a")
			errDelete := c.Delete(ctx, "a")
			if tt.wantErr == "" {
				assert.NoError(t, errGet, "get")
				assert.False(t, found, "get")
				assert.NoError(t, errDelete, "delete")
				return
			}
			for name, err := range map[string]error{"get": errGet, "delete": errDelete} {
				require.Error(t, err, "%s: a 404 that is not the store's NoSuchBucket is an error, not a bucket gone", name)
				assert.Contains(t, err.Error(), tt.wantErr, name)
				se, ok := errors.AsType[*store.StatusError](err)
				if assert.True(t, ok, "%s: a StatusError", name) {
					assert.Equal(t, http.StatusNotFound, se.Code, name)
				}
			}
		})
	}
}

// answerNotFound answers every request with 404 and body.
func answerNotFound(body string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, body)
	})
}

func TestClientTransportErrors(t *testing.T) {
	ctx := t.Context()
	down := store.NewClient("http://"+closedAddress(t), nil)
	_, _, errGet := down.Get(ctx, "a")
	_, errPut := down.Put(ctx, "a", euWest)
	_, errList := down.List(ctx)
	errDelete := down.Delete(ctx, "a")
	for name, err := range map[string]error{"get": errGet, "put": errPut, "list": errList, "delete": errDelete} {
		assert.ErrorIs(t, err, syscall.ECONNREFUSED, name)
		_, ok := errors.AsType[*store.StatusError](err)
		assert.False(t, ok, name)
	}

	_, err := store.NewClient("http://[::1", nil).List(ctx)
	assert.ErrorContains(t, err, "bucket store:", "a bad URL")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, ts, _ := start(t)
	_, err = store.NewClient(ts.URL, nil).List(cancelled)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestPersistence(t *testing.T) {
	_, ts, file := start(t)
	c := store.NewClient(ts.URL, nil)
	ctx := t.Context()
	for _, step := range []func() error{
		func() error { _, err := c.Put(ctx, "a", euWest); return err },
		func() error { _, err := c.PutAs(ctx, "me", "b", euWest); return err },
		func() error { _, err := c.Put(ctx, "a", usEast); return err },
		func() error { _, err := c.Put(ctx, "c", usEast); return err },
		func() error { return c.Delete(ctx, "c") },
	} {
		require.NoError(t, step())
	}
	want, err := c.List(ctx)
	require.NoError(t, err)

	again := newServer(t, file)
	ts2, _ := serve(t, again, nil)
	c2 := store.NewClient(ts2.URL, nil)
	got, err := c2.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, []store.Bucket{{Name: "a", Spec: usEast, Version: 2}, {Name: "b", Owner: "me", Spec: euWest, Version: 1}}, got, "owners included")

	// The sequence goes on from the data file: a client that saw every
	// change waits, one that did not gets every name.
	code, _, body := request(t, "GET", ts2.URL+"/changes?after=5&wait=1ms", "")
	assert.Equal(t, 200, code)
	assert.JSONEq(t, `{"seq":5,"names":[]}`, body)
	code, _, body = request(t, "GET", ts2.URL+"/changes?after=3&wait=1h", "")
	assert.Equal(t, 200, code)
	assert.JSONEq(t, `{"seq":5,"names":["a","b"]}`, body)
	_, err = c2.Put(ctx, "b", usEast)
	require.NoError(t, err)
	code, _, body = request(t, "GET", ts2.URL+"/changes?after=5&wait=1h", "")
	assert.Equal(t, 200, code)
	assert.JSONEq(t, `{"seq":6,"names":["b"]}`, body)

	entries, err := os.ReadDir(filepath.Dir(file))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left")
	assert.Equal(t, "buckets.json", entries[0].Name())
}

func TestNewServerErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string // of the data file; none when empty
		dir     bool   // the data file is a directory
		wantErr string
	}{
		{name: "not JSON", content: "buckets", wantErr: "invalid character"},
		{name: "bad name", content: `{"seq":1,"buckets":[{"name":"A","version":1}]}`, wantErr: `bucket name "A"`},
		{name: "twice", content: `{"seq":2,"buckets":[{"name":"a","version":1},{"name":"a","version":1}]}`, wantErr: `bucket "a" is twice there`},
		{name: "no version", content: `{"seq":1,"buckets":[{"name":"a"}]}`, wantErr: "has version 0"},
		{name: "negative seq", content: `{"seq":-1,"buckets":[]}`, wantErr: "negative seq"},
		{name: "a directory", dir: true, wantErr: "is a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "buckets.json")
			if tt.dir {
				require.NoError(t, os.Mkdir(file, 0o700))
			} else {
				require.NoError(t, os.WriteFile(file, []byte(tt.content), 0o600))
			}
			_, err := store.NewServer(file)
			assert.ErrorContains(t, err, tt.wantErr)
		})
	}
	_, err := store.NewServer("")
	assert.ErrorContains(t, err, "no data file")
}

func TestSaveFailure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.Mkdir(dir, 0o700))
	srv := newServer(t, filepath.Join(dir, "buckets.json"))
	ts, _ := serve(t, srv, nil)
	c := store.NewClient(ts.URL, nil)
	ctx := t.Context()
	_, err := c.Put(ctx, "a", euWest)
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(dir))

	tests := []struct {
		name string
		call func() error
	}{
		{name: "create", call: func() error { _, err := c.Put(ctx, "b", euWest); return err }},
		{name: "replace", call: func() error { _, err := c.Put(ctx, "a", usEast); return err }},
		{name: "delete", call: func() error { return c.Delete(ctx, "a") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			se, ok := errors.AsType[*store.StatusError](err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, http.StatusInternalServerError, se.Code)
			assert.Contains(t, se.Message, "saving the buckets")
			list, err := c.List(ctx)
			require.NoError(t, err)
			assert.Equal(t, []store.Bucket{{Name: "a", Spec: euWest, Version: 1}}, list, "nothing changed")
			code, _, body := request(t, "GET", ts.URL+"/changes?after=1&wait=0s", "")
			assert.Equal(t, 200, code)
			assert.JSONEq(t, `{"seq":1,"names":[]}`, body, "no change is told")
		})
	}
	_, err = c.Put(ctx, "a", euWest)
	assert.NoError(t, err, "a put of the same spec writes nothing")
}

func TestLongPoll(t *testing.T) {
	srv, ts, _ := start(t)
	c := store.NewClient(ts.URL, nil)

	type answer struct {
		code int
		body string
	}
	poll := func(query string) <-chan answer {
		ch := make(chan answer, 1)
		go func() {
			resp, err := http.Get(ts.URL + "/changes?" + query)
			if err != nil {
				ch <- answer{body: err.Error()}
				return
			}
			defer func() { _ = resp.Body.Close() }()
			data, _ := io.ReadAll(resp.Body)
			ch <- answer{code: resp.StatusCode, body: string(data)}
		}()
		return ch
	}
	wait := func(ch <-chan answer) answer {
		t.Helper()
		select {
		case a := <-ch:
			return a
		case <-time.After(timeout):
			require.FailNow(t, "the long poll did not answer")
			return answer{}
		}
	}

	// Whether the poll arrives before or after the change, it answers it;
	// a wait beyond MaxWait is cut, not refused.
	pending := poll("after=0&wait=10m")
	_, err := c.Put(t.Context(), "a", euWest)
	require.NoError(t, err)
	got := wait(pending)
	assert.Equal(t, 200, got.code)
	assert.JSONEq(t, `{"seq":1,"names":["a"]}`, got.body)

	pending = poll("after=1")
	_, err = c.Put(t.Context(), "b", euWest)
	require.NoError(t, err)
	require.NoError(t, c.Delete(t.Context(), "a"))
	got = wait(pending)
	assert.Equal(t, 200, got.code)
	assert.Contains(t, []string{`{"seq":2,"names":["b"]}`, `{"seq":3,"names":["a","b"]}`}, strings.TrimSpace(got.body))

	got = wait(poll("after=1&wait=1h"))
	assert.JSONEq(t, `{"seq":3,"names":["a","b"]}`, got.body, "a deleted name is told too")

	// Close wakes the pending polls and answers the later ones at once.
	pending = poll("after=3&wait=1h")
	srv.Close()
	got = wait(pending)
	assert.Equal(t, http.StatusServiceUnavailable, got.code)
	assert.JSONEq(t, `{"error":"bucket store is shutting down"}`, got.body)
	assert.Equal(t, http.StatusServiceUnavailable, wait(poll("after=3&wait=1h")).code)
	srv.Close()
	_, err = c.Put(t.Context(), "c", euWest)
	assert.NoError(t, err, "a closed Server still serves the buckets")
}

func TestChanges(t *testing.T) {
	_, ts, _ := start(t)
	c := store.NewClient(ts.URL, nil)
	ctx := t.Context()
	put := func(name string, spec store.Spec) func() {
		return func() {
			_, err := c.Put(ctx, name, spec)
			require.NoError(t, err)
		}
	}
	del := func(name string) func() { return func() { require.NoError(t, c.Delete(ctx, name)) } }

	ch := c.Changes(ctx)
	// Each step waits for its batch before the next begins, so that a
	// change that should not be told would come before the next batch.
	steps := []struct {
		name string
		do   []func()
		want []string
	}{
		{name: "create", do: []func(){put("a", euWest)}, want: []string{"a"}},
		{name: "a put of the same spec is no change", do: []func(){put("a", euWest), put("b", euWest)}, want: []string{"b"}},
		{name: "replace", do: []func(){put("a", usEast)}, want: []string{"a"}},
		{name: "delete", do: []func(){del("a")}, want: []string{"a"}},
		{name: "a delete of a missing bucket is no change", do: []func(){del("a"), put("b", usEast)}, want: []string{"b"}},
		{name: "create again", do: []func(){put("a", euWest)}, want: []string{"a"}},
	}
	for _, s := range steps {
		for _, do := range s.do {
			do()
		}
		assert.Equal(t, s.want, receive(t, ch), s.name)
	}
}

func TestChangesStopsWithItsContext(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv, err := store.NewServer(filepath.Join(t.TempDir(), "buckets.json"))
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()

	up := store.NewClient(ts.URL, &http.Client{Transport: tr})
	down := store.NewClient("http://"+closedAddress(t), &http.Client{Transport: tr})

	tests := []struct {
		name   string
		client *store.Client
		// before runs between the start of Changes and the cancel.
		before func(t *testing.T, ch <-chan []string)
	}{
		{name: "while polling", client: up, before: func(t *testing.T, ch <-chan []string) {
			_, err := up.Put(t.Context(), "a", euWest)
			require.NoError(t, err)
			assert.Equal(t, []string{"a"}, receive(t, ch))
		}},
		{name: "with a batch nobody receives", client: up, before: func(t *testing.T, _ <-chan []string) {
			_, err := up.Put(t.Context(), "b", euWest)
			require.NoError(t, err)
		}},
		{name: "while the store is down", client: down, before: func(t *testing.T, _ <-chan []string) {
			_, err := down.List(t.Context())
			require.ErrorIs(t, err, syscall.ECONNREFUSED)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			ch := tt.client.Changes(ctx)
			tt.before(t, ch)
			cancel()
			// The goroutine returns and closes the channel, whether or not
			// anyone receives: goleak checks the first, this the second.
			deadline := time.After(timeout)
			for {
				select {
				case _, ok := <-ch:
					if ok {
						continue
					}
				case <-deadline:
					require.FailNow(t, "the channel did not close")
				}
				break
			}
		})
	}
}

func TestChangesAcrossRestarts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	file := filepath.Join(t.TempDir(), "buckets.json")
	_, stop := serve(t, newServer(t, file), ln)

	c := store.NewClient("http://"+addr, nil)
	ctx := t.Context()
	ch := c.Changes(ctx)
	_, err = c.Put(ctx, "a", euWest)
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, receive(t, ch))

	// Down: the client cannot reach it, and a change is made to the data
	// file that the client is not told of.
	stop()
	_, _, err = c.Get(ctx, "a")
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	offline := newServer(t, file)
	rec := httptest.NewRecorder()
	offline.ServeHTTP(rec, httptest.NewRequest("PUT", "/buckets/b", strings.NewReader(`{"region":"eu-west-1"}`)))
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())

	// Back on the same address: the client was behind, so it gets every
	// name; then the changes as they come.
	_, stop = serve(t, newServer(t, file), listenOn(t, addr))
	assert.Equal(t, []string{"a", "b"}, receive(t, ch), "every name after a restart the client was behind")
	_, err = c.Put(ctx, "c", usEast)
	require.NoError(t, err)
	assert.Equal(t, []string{"c"}, receive(t, ch))

	// Back again with a new data file, whose sequence starts again below
	// the client's: every name again.
	stop()
	fresh := newServer(t, filepath.Join(t.TempDir(), "buckets.json"))
	rec = httptest.NewRecorder()
	fresh.ServeHTTP(rec, httptest.NewRequest("PUT", "/buckets/z", strings.NewReader(`{"region":"eu-west-1"}`)))
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	serve(t, fresh, listenOn(t, addr))
	assert.Equal(t, []string{"z"}, receive(t, ch), "every name after the data file was replaced")
	_, err = c.Put(ctx, "y", usEast)
	require.NoError(t, err)
	assert.Equal(t, []string{"y"}, receive(t, ch))
}
