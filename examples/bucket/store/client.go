package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

const (
	// DefaultTimeout bounds each request of a Client made without an
	// http.Client of its own.
	DefaultTimeout = 10 * time.Second

	// pollWait is the wait a Client asks of each long poll, and pollSlack
	// what it allows the answer on top of it.
	pollWait  = DefaultWait
	pollSlack = 10 * time.Second
	// minBackoff and maxBackoff bound the pause of Changes between failed
	// long polls: it starts at minBackoff and doubles up to maxBackoff.
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
	// maxAnswer bounds the body of an answer.
	maxAnswer = 64 << 20
)

// StatusError is the answer of a store that refused or failed a request:
// its HTTP status code and the message and reason of its
// {"error": ..., "reason": ...} body (the body itself, or the status text,
// when it has no such message).
type StatusError struct {
	// Code is the HTTP status code, such as 400 or 500.
	Code int
	// Message tells what went wrong.
	Message string
	// Reason is the store's word for it, such as ReasonNotOwner; often
	// empty.
	Reason string
}

// Error returns the code and the message.
func (e *StatusError) Error() string {
	return fmt.Sprintf("bucket store: %d %s: %s", e.Code, http.StatusText(e.Code), e.Message)
}

// Is reports whether target is ErrNotOwner and e the store's answer that
// says so.
func (e *StatusError) Is(target error) bool {
	return target == ErrNotOwner && e.Code == http.StatusConflict && e.Reason == ReasonNotOwner
}

// isNoSuchBucket reports whether err is the store's answer that there is no
// such bucket. Any other 404 (a wrong base URL, a proxy, a store that does
// not give reasons) is not: taking it for "gone" would drop a finalizer
// while the bucket is still there.
func isNoSuchBucket(err error) bool {
	se, ok := errors.AsType[*StatusError](err)
	return ok && se.Code == http.StatusNotFound && se.Reason == ReasonNoSuchBucket
}

var (
	// ErrNotOwner matches (with errors.Is) the error of PutAs and DeleteAs
	// for a bucket that exists and is not the owner's: the store changed
	// nothing.
	ErrNotOwner = errors.New("bucket store: the bucket is not the owner's")
	// ErrNoOwner is the error of PutAs and DeleteAs given an empty owner;
	// they send nothing.
	ErrNoOwner = errors.New("bucket store: no owner")
)

// Client is a client of the bucket store at one URL. It is safe for
// concurrent use. The errors of its methods are a *StatusError when the store
// answered with an error, else (the store is down or unreachable) the
// transport's error wrapped, so that for example
// errors.Is(err, syscall.ECONNREFUSED) holds when nothing listens there;
// and ErrNoOwner for a write on behalf of nobody, which is not sent.
type Client struct {
	base string
	hc   *http.Client
	poll *http.Client // hc without its Timeout: a long poll has a deadline of its own
}

// NewClient returns a Client of the store at baseURL (for example
// "http://127.0.0.1:8090") that sends its requests with hc, or, when hc is
// nil, with an http.Client whose Timeout is DefaultTimeout. The long polls
// of Changes ignore hc.Timeout: each waits up to DefaultWait, with a
// deadline a little later.
func NewClient(baseURL string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	poll := *hc
	poll.Timeout = 0
	return &Client{base: strings.TrimRight(baseURL, "/"), hc: hc, poll: &poll}
}

// Get returns the bucket name and true, or false when the store answers
// that it has no such bucket.
func (c *Client) Get(ctx context.Context, name string) (Bucket, bool, error) {
	var b Bucket
	err := c.do(ctx, c.hc, http.MethodGet, bucketPath(name), "", nil, &b)
	if isNoSuchBucket(err) {
		return Bucket{}, false, nil
	}
	if err != nil {
		return Bucket{}, false, err
	}
	return b, true, nil
}

// Put creates the bucket name with spec, without an owner, or replaces the
// spec of the bucket name, whoever owns it, and returns the bucket as the
// store now holds it. Putting the spec already there changes nothing (the
// Version stays).
func (c *Client) Put(ctx context.Context, name string, spec Spec) (Bucket, error) {
	return c.put(ctx, "", name, spec)
}

// PutAs is Put on behalf of owner: it creates the bucket name owned by
// owner, or replaces its spec if owner owns it. A bucket owned by another
// or by nobody is left as it is, and the error matches ErrNotOwner; the
// store decides, so of writers with different owners racing to create the
// bucket exactly one creates it.
func (c *Client) PutAs(ctx context.Context, owner, name string, spec Spec) (Bucket, error) {
	if owner == "" {
		return Bucket{}, ErrNoOwner
	}
	return c.put(ctx, owner, name, spec)
}

func (c *Client) put(ctx context.Context, owner, name string, spec Spec) (Bucket, error) {
	var b Bucket
	if err := c.do(ctx, c.hc, http.MethodPut, bucketPath(name), owner, spec, &b); err != nil {
		return Bucket{}, err
	}
	return b, nil
}

// Delete deletes the bucket name, whoever owns it; it returns nil too when
// the store answers that there is no such bucket.
func (c *Client) Delete(ctx context.Context, name string) error {
	return c.delete(ctx, "", name)
}

// DeleteAs is Delete on behalf of owner: it deletes the bucket name only if
// owner owns it. A bucket owned by another or by nobody is left, and the
// error matches ErrNotOwner.
func (c *Client) DeleteAs(ctx context.Context, owner, name string) error {
	if owner == "" {
		return ErrNoOwner
	}
	return c.delete(ctx, owner, name)
}

func (c *Client) delete(ctx context.Context, owner, name string) error {
	err := c.do(ctx, c.hc, http.MethodDelete, bucketPath(name), owner, nil, nil)
	if isNoSuchBucket(err) {
		return nil
	}
	return err
}

// List returns every bucket, sorted by name.
func (c *Client) List(ctx context.Context) ([]Bucket, error) {
	var buckets []Bucket
	if err := c.do(ctx, c.hc, http.MethodGet, "/buckets", "", nil, &buckets); err != nil {
		return nil, err
	}
	return buckets, nil
}

// Changes starts a goroutine that long-polls the store's /changes and sends
// on the returned channel the names of the buckets that changed, a batch at
// a time, each batch sorted, distinct and not empty. Its first poll asks for
// the changes after sequence number 0, which the store answers with the
// names changed since it started, or with every bucket's name when its data
// file had numbered changes before (see the package documentation). While
// the store is down or answers with an error, it tries again after a pause
// that doubles from 100ms up to 5s; when the store is back it asks from the
// last sequence number it was given, so that it misses no change (it may
// send names that did not change). The goroutine stops and closes the
// channel when ctx is done, even when nobody receives.
func (c *Client) Changes(ctx context.Context) <-chan []string {
	ch := make(chan []string)
	go c.watch(ctx, ch)
	return ch
}

func (c *Client) watch(ctx context.Context, ch chan<- []string) {
	defer close(ch)
	var after int64
	backoff := minBackoff
	for {
		set, err := c.changesAfter(ctx, after)
		if err != nil {
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = minBackoff
		after = set.Seq
		if len(set.Names) == 0 {
			continue
		}
		select {
		case ch <- set.Names:
		case <-ctx.Done():
			return
		}
	}
}

// changesAfter makes one long poll of /changes.
func (c *Client) changesAfter(ctx context.Context, after int64) (ChangeSet, error) {
	ctx, cancel := context.WithTimeout(ctx, pollWait+pollSlack)
	defer cancel()
	q := url.Values{"after": {strconv.FormatInt(after, 10)}, "wait": {pollWait.String()}}
	var set ChangeSet
	err := c.do(ctx, c.poll, http.MethodGet, "/changes?"+q.Encode(), "", nil, &set)
	return set, err
}

func bucketPath(name string) string { return "/buckets/" + url.PathEscape(name) }

// do sends a request on behalf of owner, when not empty, with the JSON of
// in, when not nil, as its body, and decodes the answer into out, when not
// nil.
func (c *Client) do(ctx context.Context, hc *http.Client, method, path, owner string, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("bucket store: %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("bucket store: %w", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if owner != "" {
		req.Header.Set(OwnerHeader, owner)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("bucket store: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("bucket store: %s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return statusError(resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("bucket store: %s %s: decoding the answer: %w", method, path, err)
		}
	}
	return nil
}

// statusError returns the error of an answer with code and body.
func statusError(code int, body []byte) *StatusError {
	var eb errorBody
	if json.Unmarshal(body, &eb) == nil && eb.Error != "" {
		return &StatusError{Code: code, Message: eb.Error, Reason: eb.Reason}
	}
	if msg := strings.TrimSpace(string(body)); msg != "" {
		return &StatusError{Code: code, Message: msg}
	}
	return &StatusError{Code: code, Message: http.StatusText(code)}
}
