package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
)

// ReadCRDs reads every CustomResourceDefinition from the given files and
// directories. A directory contributes its *.yaml, *.yml and *.json files
// (not those in subdirectories) in file name order, except a kustomize
// kustomization file (kustomization.yaml, kustomization.yml or
// Kustomization), so that a directory of generated manifests laid out for
// kubectl apply -k reads as it is; a file is read whatever its name. A
// file may hold several YAML documents; empty documents are skipped and
// any other kind of object is an error.
func ReadCRDs(paths ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("reading CRDs: %w", err)
		}
		files := []string{p}
		if info.IsDir() {
			if files, err = crdFilesIn(p); err != nil {
				return nil, err
			}
		}
		for _, f := range files {
			got, err := readCRDFile(f)
			if err != nil {
				return nil, err
			}
			crds = append(crds, got...)
		}
	}
	return crds, nil
}

// crdFilesIn lists the manifest files directly in dir, in name order.
func crdFilesIn(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading CRDs: %w", err)
	}
	var files []string
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if slices.Contains([]string{"kustomization.yaml", "kustomization.yml", "Kustomization"}, e.Name()) {
			continue
		}
		if !e.IsDir() && slices.Contains([]string{".yaml", ".yml", ".json"}, ext) {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	return files, nil
}

func readCRDFile(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading CRDs: %w", err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var crds []*apiextensionsv1.CustomResourceDefinition
	for i := 0; ; i++ {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := dec.Decode(crd); err != nil {
			if errors.Is(err, io.EOF) {
				return crds, nil
			}
			return nil, fmt.Errorf("reading CRDs from %s (document %d): %w", path, i+1, err)
		}
		if crd.Kind == "" && crd.Name == "" {
			continue // empty document
		}
		if crd.Kind != "CustomResourceDefinition" {
			return nil, fmt.Errorf("reading CRDs from %s (document %d): kind %q is not CustomResourceDefinition", path, i+1, crd.Kind)
		}
		crds = append(crds, crd)
	}
}

// InstallCRDs creates (or updates) the CustomResourceDefinitions found in
// the files and directories (see ReadCRDs) and waits until each is Established and its
// served versions appear in discovery, so clients and informers can use them
// at once. Note that the API server holds any create of a custom resource
// for 2 seconds while its CRD has been Established for less than that.
func (cp *ControlPlane) InstallCRDs(ctx context.Context, paths ...string) error {
	crds, err := ReadCRDs(paths...)
	if err != nil {
		return err
	}
	client, err := apiextensionsclient.NewForConfig(cp.admin)
	if err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cp.admin)
	if err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	api := client.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		_, err := api.Create(ctx, crd, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			var cur *apiextensionsv1.CustomResourceDefinition
			cur, err = api.Get(ctx, crd.Name, metav1.GetOptions{})
			if err == nil {
				crd.ResourceVersion = cur.ResourceVersion
				_, err = api.Update(ctx, crd, metav1.UpdateOptions{})
			}
		}
		if err != nil {
			return fmt.Errorf("installing CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		if err := waitFor(ctx, "CRD "+crd.Name+" to be established", cp.processes(), func(ctx context.Context) (bool, error) {
			cur, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return crdEstablished(cur), nil
		}); err != nil {
			return err
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			gv := crd.Spec.Group + "/" + v.Name
			if err := waitFor(ctx, "discovery of "+gv+" "+crd.Spec.Names.Plural, cp.processes(), func(ctx context.Context) (bool, error) {
				list, err := disco.ServerResourcesForGroupVersion(gv)
				if err != nil {
					return false, err
				}
				for _, r := range list.APIResources {
					if r.Name == crd.Spec.Names.Plural {
						return true, nil
					}
				}
				return false, nil
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

func crdEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	established, namesAccepted := false, false
	for _, c := range crd.Status.Conditions {
		switch c.Type {
		case apiextensionsv1.Established:
			established = c.Status == apiextensionsv1.ConditionTrue
		case apiextensionsv1.NamesAccepted:
			namesAccepted = c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return established && namesAccepted
}
