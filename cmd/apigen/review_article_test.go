package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The scaffolds' comments (types.go's Spec doc, which controller-gen
// copies into the CRD's description that kubectl explain prints, and the
// webhooks' and tests' comments) put "an" before a kind that begins with
// a vowel letter, whatever its sound: "the desired state of an User", "an
// Unit", "an UserGroup"; and "a" before one that begins with a vowel
// sound spelled by a consonant: "a HTTPRoute", "a SQLInstance", "a
// FTPServer", "a Hour". What should happen: the article follows the
// sound, as a kubebuilder user writes it: "a User", "a Unit", "an
// HTTPRoute", "an SQLInstance"; at least the common English "U" (you)
// words and capitalised acronyms (each letter spoken) should be right.
func TestReviewArticleFollowsSound(t *testing.T) {
	for kind, want := range map[string]string{
		"User": "a", "UserGroup": "a", "Unit": "a", "UniqueName": "a",
		"HTTPRoute": "an", "SQLInstance": "an", "FTPServer": "an", "MySQLDatabase": "a",
		"Order": "an", "Widget": "a",
	} {
		assert.Equal(t, want, article(kind), "the article of %s", kind)
	}
}
