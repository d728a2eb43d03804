package lambdafn

import (
	"os"
	"regexp"
	"testing"
)

// The CDK app (its own module) alarms on metrics in EMFNamespace: the two
// constants must agree, or the alarms watch an empty namespace.
func TestEMFNamespaceMatchesCDK(t *testing.T) {
	src, err := os.ReadFile("../../infra/cdk/stack.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^const emfNamespace = "([^"]*)"`).FindSubmatch(src)
	if m == nil {
		t.Fatal("infra/cdk/stack.go defines no emfNamespace")
	}
	if string(m[1]) != EMFNamespace {
		t.Errorf("infra/cdk alarms on namespace %q, the functions write %q", m[1], EMFNamespace)
	}
}
