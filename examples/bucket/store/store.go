// Package store is the external system of examples/bucket: a small HTTP
// service that holds named buckets, standing in for the API of a cloud
// storage service outside the cluster, and its Go client. The operator of
// examples/bucket makes the store's buckets match its Bucket resources and
// learns from the store's change feed which buckets changed behind its back.
//
// Server is the service, an http.Handler; cmd/bucketstore runs it as a
// process of its own, so that it can be killed and restarted. It serves:
//
//	PUT    /buckets/{name}            create (201) or replace (200) a bucket; the body is a Spec, the answer the Bucket
//	GET    /buckets/{name}            the Bucket (200), or 404 NoSuchBucket
//	DELETE /buckets/{name}            204, or 404 NoSuchBucket when there is no such bucket
//	GET    /buckets                   every Bucket, sorted by name (200)
//	GET    /changes?after=N&wait=D    long poll for the names of changed buckets (200, a ChangeSet)
//
// Bucket names are DNS labels (see CheckName). Errors are answered as JSON,
// {"error": "...", "reason": "..."}, with 400 (bad name, owner, query or
// body), 404 (no such bucket or endpoint), 405 (wrong method), 409 (not the
// owner's bucket), 413 (body too large), 500 (the data file could not be
// written) or 503 (a long poll of a closed Server). The reason, a word for
// programs, is ReasonNoSuchBucket for the 404 of a bucket that does not
// exist, and only for it (any other 404, of an unknown endpoint or of a
// proxy in front of the store, says nothing about the bucket), and
// ReasonNotOwner for a 409; other errors have none.
//
// # Owners
//
// A bucket may record who created it: a PUT with the header Bucket-Owner
// (OwnerHeader) creates the bucket owned by that owner, an opaque string
// such as the UID of the object a controller created it for. A PUT or a
// DELETE with that header is a write on behalf of the owner: it changes
// only a bucket that owner owns (or, for a PUT, creates a missing one), and
// answers 409 NotOwner, changing nothing, for a bucket owned by another or
// by nobody. The store decides under its lock, so of writers with different
// owners racing to create a bucket, exactly one creates it. A write without
// the header, a person's, changes any bucket; a replace keeps the owner.
//
// # Changes
//
// The store numbers its changes: each create, each replace by a different
// spec and each delete takes the next sequence number; a PUT of the spec
// already stored is no change. GET /changes?after=N answers, as a ChangeSet,
// the latest sequence number and the names changed after N: at once when
// there are some, else at the next change, or after wait (default 30s, at
// most 60s) with no names. A client asks again with the Seq it was given.
//
// The sequence number is saved with the buckets, so it goes on across a
// restart. A Server knows which names changed only since it started, so
// when after is below the number it started at (the client was behind when
// the store stopped) or beyond the latest number (the data file was
// replaced, and the count began again), it answers at once with every
// bucket's name: a client that reconciles what it is told misses nothing.
//
// # Persistence
//
// Every change is written to the data file (a temporary file in the same
// directory, renamed over it) before it is answered, so a store that is
// killed and started again keeps its buckets. The file is JSON: the latest
// sequence number and the buckets sorted by name,
// {"seq": 3, "buckets": [{"name": "photos", "owner": "...", "spec": {...}, "version": 2}]};
// a bucket without an owner has no "owner" field, as in the data files of
// stores that did not record owners yet.
package store

import (
	"errors"
	"fmt"
)

// Spec is what a bucket is asked to be.
type Spec struct {
	// Region is where the bucket lives.
	Region string `json:"region"`
	// Versioning tells whether the bucket keeps the old versions of its
	// objects.
	Versioning bool `json:"versioning"`
}

// OwnerHeader is the request header of a write on behalf of an owner (see
// the package documentation).
const OwnerHeader = "Bucket-Owner"

// Reasons of the store's error answers.
const (
	// ReasonNoSuchBucket is the reason of the 404 of a bucket that does not
	// exist.
	ReasonNoSuchBucket = "NoSuchBucket"
	// ReasonNotOwner is the reason of the 409 of a write on behalf of an
	// owner to a bucket that owner does not own.
	ReasonNotOwner = "NotOwner"
)

// Bucket is a bucket as the store holds it.
type Bucket struct {
	// Name names the bucket; it is a DNS label (see CheckName).
	Name string `json:"name"`
	// Owner is who created the bucket, as the OwnerHeader of its creating
	// PUT said; empty when that PUT had none. It never changes.
	Owner string `json:"owner,omitempty"`
	// Spec is the bucket's latest spec.
	Spec Spec `json:"spec"`
	// Version is the store's own counter of this bucket's writes: 1 when it
	// is created, one more at each replace by a different spec.
	Version int64 `json:"version"`
}

// ChangeSet is the answer of GET /changes: the latest sequence number of the
// store and the names, sorted and distinct, that changed after the number
// asked for. Names is empty, not null, when nothing changed.
type ChangeSet struct {
	// Seq is the number of the store's latest change, the after of the
	// next poll.
	Seq int64 `json:"seq"`
	// Names are the names of the buckets that changed.
	Names []string `json:"names"`
}

// maxNameLen is the longest bucket name, that of a DNS label.
const maxNameLen = 63

// CheckName returns nil when name can name a bucket, else an error telling
// why not. A bucket name is a DNS label: 1 to 63 lowercase letters, digits
// and '-', starting and ending with a letter or a digit.
func CheckName(name string) error {
	switch {
	case name == "":
		return errors.New("bucket name is empty")
	case len(name) > maxNameLen:
		return fmt.Errorf("bucket name %q is longer than %d characters", name, maxNameLen)
	case !alphanumeric(name[0]) || !alphanumeric(name[len(name)-1]):
		return fmt.Errorf("bucket name %q must start and end with a lowercase letter or a digit", name)
	}
	for i := range len(name) {
		if c := name[i]; !alphanumeric(c) && c != '-' {
			return fmt.Errorf("bucket name %q may hold only lowercase letters, digits and '-'", name)
		}
	}
	return nil
}

func alphanumeric(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }
