package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	// DefaultWait is how long a long poll of /changes waits when it does not
	// say.
	DefaultWait = 30 * time.Second
	// MaxWait is the longest a long poll of /changes waits; a longer wait is
	// cut to it.
	MaxWait = 60 * time.Second
	// maxBody bounds the body of a PUT.
	maxBody = 1 << 20
)

// Server is the bucket store: an http.Handler serving the endpoints of the
// package documentation, which keeps its buckets in a data file. It is safe
// for concurrent use.
type Server struct {
	dataFile string

	mu      sync.Mutex
	buckets map[string]Bucket
	seq     int64            // number of the latest change
	base    int64            // seq when the Server started; changed holds the changes after it
	changed map[string]int64 // every name changed since the start, to the number of its latest change
	wake    chan struct{}    // closed, then replaced, at each change

	closed    chan struct{}
	closeOnce sync.Once
}

// dataFileContent is what the data file holds.
type dataFileContent struct {
	Seq     int64    `json:"seq"`
	Buckets []Bucket `json:"buckets"`
}

// NewServer returns a Server keeping its buckets in dataFile: it loads them
// from the file when it exists, and starts empty when it does not (the file
// is created at the first change; its directory must exist). It fails when
// the file cannot be read or does not hold valid buckets.
func NewServer(dataFile string) (*Server, error) {
	if dataFile == "" {
		return nil, errors.New("bucket store: no data file")
	}
	s := &Server{
		dataFile: dataFile,
		buckets:  map[string]Bucket{},
		changed:  map[string]int64{},
		wake:     make(chan struct{}),
		closed:   make(chan struct{}),
	}
	data, err := os.ReadFile(dataFile)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("bucket store: %w", err)
	}
	var content dataFileContent
	if err := json.Unmarshal(data, &content); err != nil {
		return nil, fmt.Errorf("bucket store: data file %s: %w", dataFile, err)
	}
	if content.Seq < 0 {
		return nil, fmt.Errorf("bucket store: data file %s: negative seq %d", dataFile, content.Seq)
	}
	for _, b := range content.Buckets {
		if err := CheckName(b.Name); err != nil {
			return nil, fmt.Errorf("bucket store: data file %s: %w", dataFile, err)
		}
		if _, dup := s.buckets[b.Name]; dup || b.Version < 1 {
			return nil, fmt.Errorf("bucket store: data file %s: bucket %q is twice there or has version %d", dataFile, b.Name, b.Version)
		}
		s.buckets[b.Name] = b
	}
	s.seq, s.base = content.Seq, content.Seq
	return s, nil
}

// Close wakes every pending long poll of /changes, which answers 503, as
// does every later one; the other endpoints go on being served. Call it
// before shutting down the HTTP server, which waits for pending requests.
// Close may be called more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closed) })
}

// ServeHTTP serves the endpoints of the package documentation.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch path := r.URL.Path; {
	case path == "/buckets":
		if r.Method != http.MethodGet {
			methodNotAllowed(w, r, http.MethodGet)
			return
		}
		s.list(w)
	case strings.HasPrefix(path, "/buckets/"):
		name := strings.TrimPrefix(path, "/buckets/")
		owner := r.Header.Get(OwnerHeader)
		if _, set := r.Header[OwnerHeader]; set && owner == "" {
			writeError(w, http.StatusBadRequest, "header %s is empty", OwnerHeader)
			return
		}
		switch r.Method {
		case http.MethodGet:
			s.get(w, name)
		case http.MethodPut:
			s.put(w, r, name, owner)
		case http.MethodDelete:
			s.delete(w, name, owner)
		default:
			methodNotAllowed(w, r, http.MethodGet, http.MethodPut, http.MethodDelete)
		}
	case path == "/changes":
		if r.Method != http.MethodGet {
			methodNotAllowed(w, r, http.MethodGet)
			return
		}
		s.changes(w, r)
	default:
		writeError(w, http.StatusNotFound, "no endpoint %s", path)
	}
}

func (s *Server) list(w http.ResponseWriter) {
	s.mu.Lock()
	buckets := s.sorted()
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, buckets)
}

func (s *Server) get(w http.ResponseWriter, name string) {
	if err := CheckName(name); err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	s.mu.Lock()
	b, ok := s.buckets[name]
	s.mu.Unlock()
	if !ok {
		writeNoSuchBucket(w, name)
		return
	}
	writeJSON(w, http.StatusOK, b)
}

// put creates or replaces the bucket name; when owner is not empty, only a
// bucket of owner's is replaced.
func (s *Server) put(w http.ResponseWriter, r *http.Request, name, owner string) {
	if err := CheckName(name); err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	var spec Spec
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(&spec)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	if err != nil {
		if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
			writeError(w, http.StatusRequestEntityTooLarge, "body is larger than %d bytes", maxBody)
			return
		}
		writeError(w, http.StatusBadRequest, "body is not a spec: %v", err)
		return
	}

	s.mu.Lock()
	old, exists := s.buckets[name]
	if exists && owner != "" && old.Owner != owner {
		s.mu.Unlock()
		writeNotOwner(w, name, owner)
		return
	}
	if exists && old.Spec == spec {
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, old)
		return
	}
	b, code := Bucket{Name: name, Owner: owner, Spec: spec, Version: 1}, http.StatusCreated
	if exists {
		b.Owner, b.Version, code = old.Owner, old.Version+1, http.StatusOK
	}
	err = s.commit(name, &b)
	s.mu.Unlock()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	writeJSON(w, code, b)
}

// delete deletes the bucket name; when owner is not empty, only a bucket of
// owner's.
func (s *Server) delete(w http.ResponseWriter, name, owner string) {
	if err := CheckName(name); err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	s.mu.Lock()
	old, exists := s.buckets[name]
	foreign := exists && owner != "" && old.Owner != owner
	var err error
	if exists && !foreign {
		err = s.commit(name, nil)
	}
	s.mu.Unlock()
	switch {
	case !exists:
		writeNoSuchBucket(w, name)
	case foreign:
		writeNotOwner(w, name, owner)
	case err != nil:
		writeError(w, http.StatusInternalServerError, "%v", err)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// commit sets the bucket name to *b, or deletes it when b is nil, saves the
// buckets and numbers the change; when the save fails, nothing changes. The
// caller holds s.mu.
func (s *Server) commit(name string, b *Bucket) error {
	old, existed := s.buckets[name]
	if b != nil {
		s.buckets[name] = *b
	} else {
		delete(s.buckets, name)
	}
	if err := s.save(s.seq + 1); err != nil {
		if existed {
			s.buckets[name] = old
		} else {
			delete(s.buckets, name)
		}
		return err
	}
	s.seq++
	s.changed[name] = s.seq
	close(s.wake)
	s.wake = make(chan struct{})
	return nil
}

// save writes the buckets and seq to a temporary file beside the data file
// and renames it over the data file. The caller holds s.mu.
func (s *Server) save(seq int64) error {
	data, err := json.MarshalIndent(dataFileContent{Seq: seq, Buckets: s.sorted()}, "", "\t")
	if err != nil {
		return fmt.Errorf("saving the buckets: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(s.dataFile), "."+filepath.Base(s.dataFile)+".*")
	if err != nil {
		return fmt.Errorf("saving the buckets: %w", err)
	}
	_, err = f.Write(append(data, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), s.dataFile)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("saving the buckets: %w", err)
	}
	return nil
}

// sorted returns the buckets sorted by name. The caller holds s.mu.
func (s *Server) sorted() []Bucket {
	buckets := make([]Bucket, 0, len(s.buckets))
	for _, name := range slices.Sorted(maps.Keys(s.buckets)) {
		buckets = append(buckets, s.buckets[name])
	}
	return buckets
}

// changesAfter returns the latest seq, the names changed after after, and
// the channel closed at the next change; ready tells whether the names are
// the answer (there are some, or after is outside what this Server knows,
// so that every bucket's name is the answer) rather than a reason to wait.
// The caller holds s.mu.
func (s *Server) changesAfter(after int64) (seq int64, names []string, ready bool, wake <-chan struct{}) {
	names = []string{}
	if after < s.base || after > s.seq {
		return s.seq, slices.Sorted(maps.Keys(s.buckets)), true, s.wake
	}
	for name, n := range s.changed {
		if n > after {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return s.seq, names, len(names) > 0, s.wake
}

func (s *Server) changes(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var after int64
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "after=%q is not a sequence number", v)
			return
		}
		after = n
	}
	wait := DefaultWait
	if v := q.Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			writeError(w, http.StatusBadRequest, "wait=%q is not a duration", v)
			return
		}
		wait = min(d, MaxWait)
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		s.mu.Lock()
		seq, names, ready, wake := s.changesAfter(after)
		s.mu.Unlock()
		if ready {
			writeJSON(w, http.StatusOK, ChangeSet{Seq: seq, Names: names})
			return
		}
		select {
		case <-wake:
		case <-timer.C:
			writeJSON(w, http.StatusOK, ChangeSet{Seq: seq, Names: names})
			return
		case <-s.closed:
			writeError(w, http.StatusServiceUnavailable, "bucket store is shutting down")
			return
		case <-r.Context().Done():
			return
		}
	}
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request, allowed ...string) {
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	writeError(w, http.StatusMethodNotAllowed, "method %s is not allowed on %s", r.Method, r.URL.Path)
}

// errorBody is the body of every error answer.
type errorBody struct {
	Error  string `json:"error"`
	Reason string `json:"reason,omitempty"`
}

func writeError(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, errorBody{Error: fmt.Sprintf(format, args...)})
}

// writeNoSuchBucket answers the 404 that tells, unlike any other, that
// there is no bucket name.
func writeNoSuchBucket(w http.ResponseWriter, name string) {
	writeJSON(w, http.StatusNotFound, errorBody{Error: fmt.Sprintf("no bucket %q", name), Reason: ReasonNoSuchBucket})
}

func writeNotOwner(w http.ResponseWriter, name, owner string) {
	writeJSON(w, http.StatusConflict, errorBody{Error: fmt.Sprintf("bucket %q is not owned by %q", name, owner), Reason: ReasonNotOwner})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
