// Package clusterprofile is a multicluster.Provider that reads the member
// clusters from the ClusterProfiles of sig-multicluster's cluster
// inventory API (multicluster.x-k8s.io/v1alpha1) in one namespace of the
// management cluster. A ClusterProfile is a member, named after it, when
// its status lists an access provider the operator is configured for: the
// provider's cluster and the operator's exec plugin for that provider make
// the member's config, as the KEP of the API's credential plugins
// describes.
//
//	p, err := clusterprofile.New(clusterprofile.Config{
//		Client:    dynamicClient,
//		Namespace: "fleet-system",
//		Providers: []clusterprofile.AccessProvider{{Name: "secretreader", Exec: exec}},
//	})
//	if err != nil {
//		return err
//	}
//	fleet, err := multicluster.New("copier", p, engage)
//
// The extensions ArgsExtension and EnvExtension of the cluster add to the
// plugin's arguments and environment where the AccessProvider's policies
// (ProfileArgs, ProfileEnv) allow it, as the API's access library does;
// by default they are left out.
//
// # ClusterProfiles are untrusted
//
// Whoever writes a ClusterProfile's status chooses the cluster the
// operator's credentials go to, so of the cluster only what the API's
// access library reads reaches the config: the server, the certificate
// authority's data (certificate-authority-data), the proxy (proxy-url)
// and the exec plugin's cluster config (the extension ExecExtension).
// Fields that would turn off TLS verification (insecure-skip-tls-verify),
// have another name verified (tls-server-name) or make the operator read
// a file (certificate-authority) are left out, as the library leaves them
// out. The only command a member's config runs is the operator's own exec
// plugin for the access provider, with the operator's arguments and
// environment: unless the AccessProvider opts in with ProfileArgs or
// ProfileEnv, which hand arguments and environment variables of that
// plugin to whoever writes the profile's status (and with them whatever
// the plugin can be made to do: read a file, run another command). A
// cluster whose server would be reached without TLS (http://, or no
// scheme and no certificate authority) is no member: the plugin's
// credentials would go in the clear.
//
// The API's Go module is not needed: the ClusterProfiles are read through
// the dynamic client. Config.Selector chooses the profiles of the
// namespace that are members by their labels, such as the label
// x-k8s.io/cluster-manager that names the cluster manager which wrote
// them (by default, every profile of the namespace is):
//
//	p, err := clusterprofile.New(clusterprofile.Config{
//		Client:    dynamicClient,
//		Namespace: "fleet-system",
//		Selector:  labels.SelectorFromSet(labels.Set{"x-k8s.io/cluster-manager": "open-cluster-management"}),
//		Providers: []clusterprofile.AccessProvider{{Name: "secretreader", Exec: exec}},
//	})
//
// A ClusterProfile whose access providers change restarts its cluster
// with the new config; one that is deleted, or no longer selected, is no
// member.
//
// # Profiles that are no member
//
// A selected ClusterProfile that lists no configured access provider, or
// whose cluster cannot be read or is refused, is no member either, and
// the reason is reported: in a Warning event on the profile
// (ReasonNoAccess) when Config.Events is set, in the Fleet's Status of
// its cluster (not ready, with the reason as its Err; see
// multicluster.Refuser), and by Provider.Refused, which lists every
// refused profile with its reason. The other members go on. A profile
// refused again for the same reason (a status update, a relist) is not
// reported again.
//
// # Permissions
//
// The Provider lists and watches the ClusterProfiles of its namespace:
// its operator needs get, list and watch on
// clusterprofiles.multicluster.x-k8s.io there, and, for the events of
// Config.Events, create and patch on events.
package clusterprofile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/queue/multicluster/internal/reported"
)

// Resource is the ClusterProfile resource.
var Resource = schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Resource: "clusterprofiles"}

// ReasonNoAccess is the reason of the Warning event on a ClusterProfile
// that lists no access provider the operator is configured for, or one
// whose cluster cannot be read.
const ReasonNoAccess = "NoAccess"

// AccessProvider is one access provider the operator can use: the name a
// ClusterProfile's status lists it under, and the exec plugin that gives
// credentials for its clusters (with ProvideClusterInfo, the plugin is
// given the cluster, extensions included). An empty InteractiveMode is
// "Never": an operator has no terminal.
type AccessProvider struct {
	Name string
	Exec clientcmdv1.ExecConfig
	// ProfileArgs says what becomes of the arguments a ClusterProfile's
	// cluster lists in its extension ArgsExtension (a JSON list of
	// strings, as the access library reads it; the API's CRD, at
	// v0.1.0, takes only objects as extensions, so an API server that
	// serves it refuses this one): ArgsAppend appends them to Exec.Args;
	// ArgsIgnore, the default, leaves them out.
	//
	// ArgsAppend hands the plugin's arguments to whoever can write a
	// ClusterProfile's status: the plugin runs in the operator, with its
	// credentials and files, with any arguments they choose (a file to
	// read, a flag that runs another command, an endpoint to send
	// credentials to). Use it only with a plugin that is safe with any
	// arguments.
	ProfileArgs ArgsPolicy
	// ProfileEnv says what becomes of the environment variables a
	// ClusterProfile's cluster lists in its extension EnvExtension (a JSON
	// object of names and values): EnvAppendIfNotExists adds those
	// Exec.Env does not set, EnvReplace adds them all, replacing Exec.Env's
	// of the same names; EnvIgnore, the default, leaves them out. The
	// variables are then in the order of their names.
	//
	// Either opt-in hands the plugin's environment to whoever can write a
	// ClusterProfile's status: variables such as PATH, HOME,
	// LD_PRELOAD, HTTPS_PROXY or a cloud SDK's credential file change
	// what the plugin runs, reads and whom it talks to, in the operator.
	// Use them only with a plugin that is safe with any environment.
	ProfileEnv EnvPolicy
}

// The extensions of a ClusterProfile's cluster that add to the exec
// plugin's arguments and environment, as the cluster inventory API's
// access library reads them (with the same policies).
const (
	ArgsExtension = "clusterprofiles.multicluster.x-k8s.io/exec/additional-args"
	EnvExtension  = "clusterprofiles.multicluster.x-k8s.io/exec/additional-envs"
)

// ArgsPolicy is an AccessProvider's ProfileArgs.
type ArgsPolicy string

// The ArgsPolicy values.
const (
	ArgsIgnore ArgsPolicy = "Ignore"
	ArgsAppend ArgsPolicy = "Append"
)

// EnvPolicy is an AccessProvider's ProfileEnv.
type EnvPolicy string

// The EnvPolicy values.
const (
	EnvIgnore            EnvPolicy = "Ignore"
	EnvAppendIfNotExists EnvPolicy = "AppendIfNotExists"
	EnvReplace           EnvPolicy = "Replace"
)

// Config configures a Provider.
type Config struct {
	// Client reaches the management cluster; required.
	Client dynamic.Interface
	// Namespace holds the ClusterProfiles; required. Only the profiles
	// of this namespace are read.
	Namespace string
	// Selector selects the ClusterProfiles of Namespace that are members,
	// by their labels. Default (nil): every ClusterProfile of Namespace.
	// A selector that selects nothing (labels.Nothing()) is refused by
	// New.
	Selector labels.Selector
	// Providers are the access providers the operator can use, in order
	// of preference; at least one.
	Providers []AccessProvider
	// Events, if set, records the Warning events on ClusterProfiles that
	// are no member. Without it the reason is still in the Fleet's Status
	// and Provider.Refused, and logged.
	Events record.EventRecorder
}

// Provider reports the members of a Fleet from ClusterProfiles; see the
// package documentation. Create it with New.
type Provider struct {
	cfg      Config
	reported reported.Kubeconfigs
}

var _ multicluster.Provider = (*Provider)(nil)

// New returns a Provider of the ClusterProfiles of cfg.Namespace that
// cfg.Selector selects. It returns an error if cfg.Client is nil,
// cfg.Namespace empty, cfg.Selector selects nothing, or an access
// provider has no name or exec command, a policy it does not know, or an
// exec config client-go refuses.
func New(cfg Config) (*Provider, error) {
	var errs []error
	if cfg.Client == nil {
		errs = append(errs, errors.New("client is nil"))
	}
	if cfg.Namespace == "" {
		errs = append(errs, errors.New("namespace is empty"))
	}
	if len(cfg.Providers) == 0 {
		errs = append(errs, errors.New("no access provider"))
	}
	if cfg.Selector == nil {
		cfg.Selector = labels.Everything()
	} else if !cfg.Selector.Empty() && cfg.Selector.String() == "" {
		// labels.Nothing(): its String is the empty selector, which an
		// API server reads as every ClusterProfile.
		errs = append(errs, errors.New("the selector selects nothing"))
	}
	cfg.Providers = slices.Clone(cfg.Providers)
	for i, p := range cfg.Providers {
		if p.Name == "" || p.Exec.Command == "" {
			errs = append(errs, fmt.Errorf("access provider %q needs a name and an exec command", p.Name))
			continue
		}
		if p.Exec.InteractiveMode == "" {
			cfg.Providers[i].Exec.InteractiveMode = clientcmdv1.NeverExecInteractiveMode
		}
		if !slices.Contains([]ArgsPolicy{"", ArgsIgnore, ArgsAppend}, p.ProfileArgs) {
			errs = append(errs, fmt.Errorf("access provider %q: unknown ProfileArgs %q", p.Name, p.ProfileArgs))
		}
		if !slices.Contains([]EnvPolicy{"", EnvIgnore, EnvAppendIfNotExists, EnvReplace}, p.ProfileEnv) {
			errs = append(errs, fmt.Errorf("access provider %q: unknown ProfileEnv %q", p.Name, p.ProfileEnv))
		}
	}
	// The operator's own exec plugins are the only ones a member's
	// config may run.
	policy := reported.Policy{}
	for _, p := range cfg.Providers {
		policy.ExecCommands = append(policy.ExecCommands, p.Exec.Command)
	}
	for _, p := range cfg.Providers {
		if p.Name == "" || p.Exec.Command == "" {
			continue
		}
		// A config that client-go refuses is refused now, not for each
		// cluster later.
		data, err := kubeconfigFor(clientcmdv1.Cluster{Server: "https://cluster.invalid"}, p)
		if err == nil {
			_, err = policy.Config(data)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("access provider %q: %w", p.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("clusterprofile: %w", err)
	}
	return &Provider{cfg: cfg, reported: reported.Kubeconfigs{Policy: policy}}, nil
}

// Run watches the ClusterProfiles and reports their clusters to m until
// ctx ends.
func (p *Provider) Run(ctx context.Context, m multicluster.Members) error {
	logger := klog.FromContext(ctx).WithValues("namespace", p.cfg.Namespace)
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(p.cfg.Client, 0, p.cfg.Namespace,
		func(o *metav1.ListOptions) { o.LabelSelector = p.cfg.Selector.String() })
	profiles := factory.ForResource(Resource).Informer()
	reg, err := profiles.AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.set(logger, m, obj) },
		UpdateFunc: func(_, obj any) { p.set(logger, m, obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				p.reported.Delete(m, u.GetName())
			}
		},
	}, cache.HandlerOptions{Logger: &logger})
	if err != nil {
		return fmt.Errorf("clusterprofile: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		m.Synced()
	}
	<-ctx.Done()
	return nil
}

// Refused returns the selected ClusterProfiles that are no member, by
// name (the name of their cluster), with the reason: the error the
// Fleet's Status of the cluster reports. A profile leaves the list when
// it becomes a member, is deleted or is no longer selected. It is empty
// before Run; it is safe to call from any goroutine, and the map is the
// caller's.
func (p *Provider) Refused() map[string]error { return p.reported.Refused() }

// set reports the cluster of a ClusterProfile, if its config changed.
func (p *Provider) set(logger klog.Logger, m multicluster.Members, obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	if !p.cfg.Selector.Matches(labels.Set(u.GetLabels())) {
		// A watch by label reports a profile that is no longer
		// selected as deleted; checking again keeps other sources of
		// events honest.
		p.reported.Delete(m, u.GetName())
		return
	}
	data, err := p.kubeconfig(u)
	if err == nil {
		err = p.reported.Set(m, u.GetName(), data)
	} else {
		err = p.reported.Refuse(m, u.GetName(), err)
	}
	if err != nil {
		logger.Error(err, "A ClusterProfile is no member", "clusterProfile", u.GetName())
		if p.cfg.Events != nil {
			p.cfg.Events.Eventf(u, corev1.EventTypeWarning, ReasonNoAccess, "Not a member: %v", err)
		}
	}
}

// kubeconfig makes the kubeconfig of a ClusterProfile: the cluster of the
// first configured access provider it lists (status.accessProviders, then
// the deprecated status.credentialProviders), with that provider's exec
// plugin as its user.
func (p *Provider) kubeconfig(u *unstructured.Unstructured) ([]byte, error) {
	listed := map[string]map[string]any{}
	for _, field := range []string{"credentialProviders", "accessProviders"} { // the latter wins
		entries, _, err := unstructured.NestedSlice(u.Object, "status", field)
		if err != nil {
			return nil, fmt.Errorf("status.%s: %w", field, err)
		}
		for _, e := range entries {
			entry, ok := e.(map[string]any)
			if !ok {
				continue
			}
			if name, _ := entry["name"].(string); name != "" {
				cluster, _ := entry["cluster"].(map[string]any)
				listed[name] = cluster
			}
		}
	}
	for _, provider := range p.cfg.Providers {
		raw, ok := listed[provider.Name]
		if !ok {
			continue
		}
		var cluster clientcmdv1.Cluster
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &cluster); err != nil {
			return nil, fmt.Errorf("access provider %s: cluster: %w", provider.Name, err)
		}
		if cluster.Server == "" {
			return nil, fmt.Errorf("access provider %s: the cluster has no server", provider.Name)
		}
		return kubeconfigFor(cluster, provider)
	}
	names := make([]string, 0, len(p.cfg.Providers))
	for _, provider := range p.cfg.Providers {
		names = append(names, provider.Name)
	}
	return nil, fmt.Errorf("its status lists none of the access providers %v", names)
}

// ExecExtension is the extension of a ClusterProfile's cluster that the
// exec plugin is given as the cluster's config (with ProvideClusterInfo).
const ExecExtension = "client.authentication.k8s.io/exec"

// kubeconfigFor makes a kubeconfig of cluster with provider's exec plugin
// as its user, with the arguments and environment of the cluster's
// extensions as the provider's policies allow. Of the cluster, only what
// the cluster inventory API's access library reads reaches the
// kubeconfig: the server, the certificate authority's data, the proxy and
// the extension ExecExtension; through the config itself a profile cannot
// turn off TLS verification, have another name verified or make the
// operator read a file. (Through the plugin's arguments and environment,
// where ProfileArgs or ProfileEnv lets it choose them, it can.)
func kubeconfigFor(cluster clientcmdv1.Cluster, provider AccessProvider) ([]byte, error) {
	exec := provider.Exec
	exec.Args, exec.Env = slices.Clone(exec.Args), slices.Clone(exec.Env)
	for _, ext := range cluster.Extensions {
		switch {
		case ext.Name == ArgsExtension && provider.ProfileArgs == ArgsAppend:
			var args []string
			if err := json.Unmarshal(ext.Extension.Raw, &args); err != nil {
				return nil, fmt.Errorf("access provider %s: extension %s: %w", provider.Name, ext.Name, err)
			}
			exec.Args = append(exec.Args, args...)
		case ext.Name == EnvExtension && (provider.ProfileEnv == EnvAppendIfNotExists || provider.ProfileEnv == EnvReplace):
			var env map[string]string
			if err := json.Unmarshal(ext.Extension.Raw, &env); err != nil {
				return nil, fmt.Errorf("access provider %s: extension %s: %w", provider.Name, ext.Name, err)
			}
			exec.Env = mergeEnv(exec.Env, env, provider.ProfileEnv == EnvReplace)
		}
	}
	read := clientcmdv1.Cluster{Server: cluster.Server, CertificateAuthorityData: cluster.CertificateAuthorityData, ProxyURL: cluster.ProxyURL}
	for _, ext := range cluster.Extensions {
		if ext.Name == ExecExtension {
			read.Extensions = append(read.Extensions, ext)
		}
	}
	return json.Marshal(clientcmdv1.Config{
		Kind: "Config", APIVersion: "v1", CurrentContext: "member",
		Clusters:  []clientcmdv1.NamedCluster{{Name: "member", Cluster: read}},
		AuthInfos: []clientcmdv1.NamedAuthInfo{{Name: provider.Name, AuthInfo: clientcmdv1.AuthInfo{Exec: &exec}}},
		Contexts:  []clientcmdv1.NamedContext{{Name: "member", Context: clientcmdv1.Context{Cluster: "member", AuthInfo: provider.Name}}},
	})
}

// mergeEnv adds the variables of extra to env, replacing those of the same
// names if replace is set, and returns them in the order of their names,
// so that the same profile always makes the same config.
func mergeEnv(env []clientcmdv1.ExecEnvVar, extra map[string]string, replace bool) []clientcmdv1.ExecEnvVar {
	merged := map[string]string{}
	for _, v := range env {
		merged[v.Name] = v.Value
	}
	for name, value := range extra {
		if _, set := merged[name]; replace || !set {
			merged[name] = value
		}
	}
	out := make([]clientcmdv1.ExecEnvVar, 0, len(merged))
	for _, name := range slices.Sorted(maps.Keys(merged)) {
		out = append(out, clientcmdv1.ExecEnvVar{Name: name, Value: merged[name]})
	}
	return out
}
