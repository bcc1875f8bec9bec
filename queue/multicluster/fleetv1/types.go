package fleetv1

// MemberStatus is one member cluster's entry in the status of a hub
// object (an object of the management cluster applied to every member):
// the member's name, whether it holds what the hub object asks, why
// (not), and the hub object's generation it is for.
//
// Declare the entries in an API type as a list keyed by cluster:
//
//	// Members is where the object stands in each member cluster.
//	// +optional
//	// +listType=map
//	// +listMapKey=cluster
//	Members []fleetv1.MemberStatus `json:"members,omitempty"`
//
// and fill it with multicluster.Results.Status. An entry with more fields
// (what the member holds, typed) is a struct of the API package that
// embeds MemberStatus with `json:",inline"` beside them.
type MemberStatus struct {
	// Cluster is the member's name.
	// +required
	Cluster string `json:"cluster"`
	// Ready is true when the member holds what the hub object asks.
	// +optional
	Ready bool `json:"ready"`
	// Reason is a CamelCase word saying why it is (not) ready, as in a
	// condition.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message says it for people.
	// +optional
	Message string `json:"message,omitempty"`
	// ObservedGeneration is the generation of the hub object that the
	// member's result is for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// DeepCopyInto copies in into out.
func (in *MemberStatus) DeepCopyInto(out *MemberStatus) {
	*out = *in
}

// DeepCopy returns a copy of in, nil for nil.
func (in *MemberStatus) DeepCopy() *MemberStatus {
	if in == nil {
		return nil
	}
	out := new(MemberStatus)
	in.DeepCopyInto(out)
	return out
}
