// Package audit reads a kube-apiserver JSON audit log so tests can count who
// did what: user, verb, resource, namespace/name and response code.
//
// The control plane in package controlplane writes such a log at Metadata
// level. A test that wants to know how many writes a controller made:
//
//	events, err := audit.ReadFile(cp.AuditLogPath())
//	if err != nil {
//		return err
//	}
//	writes := audit.Select(events, audit.ByUser("system:serviceaccount:foo:foo-controller"), audit.Writes())
//	fmt.Println(len(writes), "writes by the controller")
package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// Event is the part of an audit.k8s.io/v1 Event that tests count by. Only
// events of the ResponseComplete and Panic stages carry a response code.
type Event struct {
	AuditID     string
	Stage       string
	Level       string
	User        string
	Groups      []string
	Verb        string
	APIGroup    string
	APIVersion  string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	Code        int
	RequestURI  string
	UserAgent   string
	// Time is when the request was received.
	Time time.Time
}

// String renders the event in one line, e.g.
// "admin create configmaps ns/name -> 201".
func (e Event) String() string {
	res := e.Resource
	if e.APIGroup != "" {
		res += "." + e.APIGroup
	}
	if e.Subresource != "" {
		res += "/" + e.Subresource
	}
	obj := e.Name
	if e.Namespace != "" {
		obj = e.Namespace + "/" + e.Name
	}
	return fmt.Sprintf("%s %s %s %s -> %d", e.User, e.Verb, res, obj, e.Code)
}

// wireEvent mirrors the JSON field names of audit.k8s.io/v1 Event.
type wireEvent struct {
	Kind       string `json:"kind"`
	Level      string `json:"level"`
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	Verb       string `json:"verb"`
	User       struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"user"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
		APIVersion  string `json:"apiVersion"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
}

// Parse reads a JSON-lines audit log. Lines that are not audit events (blank
// lines, a torn last line of a log still being written) are skipped; an
// unreadable stream is an error.
func Parse(r io.Reader) ([]Event, error) {
	var events []Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var w wireEvent
		if err := json.Unmarshal(line, &w); err != nil || w.Kind != "Event" {
			continue
		}
		e := Event{
			AuditID:    w.AuditID,
			Stage:      w.Stage,
			Level:      w.Level,
			User:       w.User.Username,
			Groups:     w.User.Groups,
			Verb:       w.Verb,
			RequestURI: w.RequestURI,
			UserAgent:  w.UserAgent,
			Time:       w.RequestReceivedTimestamp,
		}
		if o := w.ObjectRef; o != nil {
			e.APIGroup, e.APIVersion, e.Resource, e.Subresource = o.APIGroup, o.APIVersion, o.Resource, o.Subresource
			e.Namespace, e.Name = o.Namespace, o.Name
		}
		if w.ResponseStatus != nil {
			e.Code = w.ResponseStatus.Code
		}
		events = append(events, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading audit log: %w", err)
	}
	return events, nil
}

// ReadFile parses the audit log at path.
func ReadFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading audit log: %w", err)
	}
	defer f.Close()
	return Parse(f)
}

// Filter selects events.
type Filter func(Event) bool

// Select returns the events that pass every filter, in log order.
func Select(events []Event, filters ...Filter) []Event {
	var out []Event
	for _, e := range events {
		if matches(e, filters) {
			out = append(out, e)
		}
	}
	return out
}

// Count returns how many events pass every filter.
func Count(events []Event, filters ...Filter) int {
	n := 0
	for _, e := range events {
		if matches(e, filters) {
			n++
		}
	}
	return n
}

func matches(e Event, filters []Filter) bool {
	for _, f := range filters {
		if !f(e) {
			return false
		}
	}
	return true
}

// ByUser selects requests made by the given user name.
func ByUser(name string) Filter { return func(e Event) bool { return e.User == name } }

// ByVerb selects requests with one of the given verbs (create, update,
// patch, delete, deletecollection, get, list, watch).
func ByVerb(verbs ...string) Filter {
	return func(e Event) bool { return slices.Contains(verbs, e.Verb) }
}

// Writes selects requests that change state: create, update, patch, delete
// and deletecollection.
func Writes() Filter { return ByVerb("create", "update", "patch", "delete", "deletecollection") }

// ByResource selects requests for a resource in an API group ("" for the
// core group), including its subresources.
func ByResource(group, resource string) Filter {
	return func(e Event) bool { return e.APIGroup == group && e.Resource == resource }
}

// BySubresource selects requests for the given subresource ("" for the main
// resource).
func BySubresource(sub string) Filter { return func(e Event) bool { return e.Subresource == sub } }

// ByObject selects requests naming the object namespace/name ("" namespace
// for cluster-scoped objects).
func ByObject(namespace, name string) Filter {
	return func(e Event) bool { return e.Namespace == namespace && e.Name == name }
}

// ByNamespace selects requests in the namespace.
func ByNamespace(namespace string) Filter {
	return func(e Event) bool { return e.Namespace == namespace }
}

// ByCode selects requests answered with the HTTP status code.
func ByCode(code int) Filter { return func(e Event) bool { return e.Code == code } }

// Succeeded selects requests answered with a 2xx status code.
func Succeeded() Filter { return func(e Event) bool { return e.Code >= 200 && e.Code < 300 } }

// Since selects requests received at or after t.
func Since(t time.Time) Filter { return func(e Event) bool { return !e.Time.Before(t) } }

// Completed selects events of the ResponseComplete stage: one per finished
// request.
func Completed() Filter { return func(e Event) bool { return e.Stage == "ResponseComplete" } }

// Lines renders events one per line (Event.String), for assertion messages.
func Lines(events []Event) []string {
	out := make([]string, 0, len(events))
	for _, e := range events {
		out = append(out, e.String())
	}
	return out
}

// Tally counts events by "verb resource[/subresource] code".
func Tally(events []Event) map[string]int {
	out := map[string]int{}
	for _, e := range events {
		res := e.Resource
		if e.Subresource != "" {
			res += "/" + e.Subresource
		}
		out[fmt.Sprintf("%s %s %d", e.Verb, res, e.Code)]++
	}
	return out
}

// FormatTally renders a Tally sorted by key, as "key: n, key: n".
func FormatTally(tally map[string]int) string {
	keys := slices.Sorted(maps.Keys(tally))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %d", k, tally[k]))
	}
	return strings.Join(parts, ", ")
}
