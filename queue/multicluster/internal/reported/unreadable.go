package reported

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/yaml"
)

// errUnreadable is the start of the error of a kubeconfig client-go
// cannot load.
const errUnreadable = "cannot read the kubeconfig"

// unreadable returns the error of a kubeconfig that client-go cannot load.
// client-go's own error is not used: some print what they could not
// decode, tokens and passwords included (a user named twice prints every
// user), and the error reaches events, logs and the Fleet's Status. What
// is wrong is found again here and said with names only: the line of a
// syntax error, the field of a value of the wrong type, a name used
// twice; else that client-go cannot load it.
func unreadable(kubeconfig []byte) error {
	jsonData, err := yaml.YAMLToJSON(kubeconfig)
	if err != nil {
		return fmt.Errorf("%s: %s", errUnreadable, syntaxError(err))
	}
	var cfg clientcmdv1.Config
	if err := json.Unmarshal(jsonData, &cfg); err != nil {
		return fmt.Errorf("%s: %s", errUnreadable, typeError(err))
	}
	if (cfg.APIVersion != "" && cfg.APIVersion != "v1") || (cfg.Kind != "" && cfg.Kind != "Config") {
		return fmt.Errorf("%s: its apiVersion and kind are not v1 and Config", errUnreadable)
	}
	if dup := duplicateNames(&cfg); dup != "" {
		return fmt.Errorf("%s: %s", errUnreadable, dup)
	}
	return fmt.Errorf("%s: client-go cannot load it", errUnreadable)
}

// yamlSyntax matches the YAML parser's syntax errors whose problem is one
// of its own fixed phrases (words, and quoted punctuation).
var yamlSyntax = regexp.MustCompile(`^yaml: line (\d+): ([a-z ]*(?:'[^\w\s]'(?: or '[^\w\s]')?)?[a-z ]*)$`)

// yamlLine matches the line number of a YAML error.
var yamlLine = regexp.MustCompile(`\byaml: line (\d+):`)

// syntaxError says where the YAML parser's err is, and what, where that
// is one of the parser's fixed phrases; never the content it read.
func syntaxError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	if m := yamlSyntax.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("not YAML or JSON: line %s: %s", m[1], m[2])
	}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("not YAML or JSON: line %s", m[1])
	}
	return "not YAML or JSON"
}

// typeError says which field of a kubeconfig holds a value of the wrong
// type, by the field's path and the kinds of value, never the value.
func typeError(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Type != nil {
		kind, _, _ := strings.Cut(typeErr.Value+" ", " ") // "number 12345": the kind alone
		field := typeErr.Field
		if field == "" {
			field = "the document"
		}
		if kind == "" {
			kind = "value"
		}
		article := "a"
		if strings.ContainsAny(kind[:1], "aeiou") {
			article = "an"
		}
		return fmt.Sprintf("%s: %s %s where a %s belongs", field, article, kind, typeErr.Type)
	}
	var b64Err base64.CorruptInputError
	if errors.As(err, &b64Err) {
		return "a field of bytes (one of the …-data) is not base64"
	}
	return "not a kubeconfig"
}

// duplicateNames says which cluster, user, context or extension of cfg is
// named twice, if one is: client-go cannot load such a kubeconfig.
func duplicateNames(cfg *clientcmdv1.Config) string {
	var dups []string
	check := func(kind, of string, names []string) {
		seen := map[string]bool{}
		for _, n := range names {
			if seen[n] {
				dups = append(dups, fmt.Sprintf("duplicate %s name %q%s", kind, n, of))
			}
			seen[n] = true
		}
	}
	extensions := func(of string, exts []clientcmdv1.NamedExtension) {
		names := make([]string, len(exts))
		for i, e := range exts {
			names[i] = e.Name
		}
		check("extension", " of "+of, names)
	}
	var clusters, users, contexts []string
	for _, c := range cfg.Clusters {
		clusters = append(clusters, c.Name)
		extensions(fmt.Sprintf("cluster %q", c.Name), c.Cluster.Extensions)
	}
	for _, u := range cfg.AuthInfos {
		users = append(users, u.Name)
		extensions(fmt.Sprintf("user %q", u.Name), u.AuthInfo.Extensions)
	}
	for _, c := range cfg.Contexts {
		contexts = append(contexts, c.Name)
		extensions(fmt.Sprintf("context %q", c.Name), c.Context.Extensions)
	}
	check("cluster", "", clusters)
	check("user", "", users)
	check("context", "", contexts)
	extensions("the preferences", cfg.Preferences.Extensions)
	extensions("the kubeconfig", cfg.Extensions)
	return strings.Join(dups, "; ")
}

// urlUserInfo matches the user info (user:password@) of a URL after its
// scheme, up to the last "@" of the word, since a password may hold "@"
// and "/" (more is redacted rather than less); bareUserInfo that of a URL
// without a scheme, at the start of the text or of a quoted string.
var (
	urlUserInfo  = regexp.MustCompile(`(://)[^\s"]*@`)
	bareUserInfo = regexp.MustCompile(`(^|")[^\s"/@]*@`)
)

// redactURLs replaces the user info of the URLs in msg, which may be a
// password or a token, with "redacted".
func redactURLs(msg string) string {
	msg = urlUserInfo.ReplaceAllString(msg, "${1}redacted@")
	return bareUserInfo.ReplaceAllString(msg, "${1}redacted@")
}
