package wimro_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// layers orders the product's packages: a package may import only packages
// of a lower layer (or its own sub-packages' shared base, listed below).
// The test kit (internal/testkit) sits above everything and nothing of the
// product imports it; docs/architecture.md draws the same picture.
var layers = []struct {
	name     string
	prefixes []string
}{
	{"base", []string{"", "/internal/pgwire", "/internal/secret", "/internal/startstop", "/internal/testsignal", "/internal/yamljson", "/internal/pglocal", "/internal/ociimage", "/migrations"}},
	{"connector contract", []string{"/connectors"}},
	{"connectors", []string{"/connectors/"}},
	{"connector set", []string{"/connectors/builtin"}},
	// actions runs a link's action through a connector and knows nothing of
	// the database: its result is the root package's.
	{"actions", []string{"/actions"}},
	{"storage", []string{"/persistence"}},
	// accountconn reads a stored account and builds its connector.
	{"account connectors", []string{"/connectors/accountconn"}},
	{"workers, engine, coordinator", []string{"/wimthread", "/engine", "/coordinator"}},
	{"http", []string{"/httpapi"}},
	{"commands and tools", []string{"/cmd/", "/packaging", "/examples", "/httpapi/internal/"}},
}

const module = "github.com/wimro/wimro"

// layerOf returns the index in layers of a product package; the most
// specific prefix wins ("/connectors/" over "/connectors").
func layerOf(pkg string) int {
	rel := strings.TrimPrefix(pkg, module)
	best, bestLen := -1, -1
	for i, l := range layers {
		for _, p := range l.prefixes {
			match := rel == p || (p != "" && strings.HasPrefix(rel, p) && (strings.HasSuffix(p, "/") || strings.HasPrefix(rel, p+"/")))
			if match && len(p) > bestLen {
				best, bestLen = i, len(p)
			}
		}
	}
	return best
}

// isKit says whether pkg is test tooling: the test kit and the connectors'
// own test helpers, which may import anything.
func isKit(pkg string) bool {
	rel := strings.TrimPrefix(pkg, module)
	return strings.HasPrefix(rel, "/internal/testkit/") || strings.HasSuffix(rel, "test") || strings.HasSuffix(rel, "/conformance")
}

func TestImportsPointDown(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, imports := f[0], f[1:]
		if isKit(pkg) {
			continue
		}
		from := layerOf(pkg)
		if from < 0 {
			t.Errorf("%s is in no layer: add it to layers", pkg)
			continue
		}
		for _, imp := range imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			if isKit(imp) {
				t.Errorf("%s imports the test kit %s", pkg, imp)
				continue
			}
			to := layerOf(imp)
			// Within a layer only a package's own sub-packages and the shared
			// bases named here may be imported.
			sameOK := to == from && (strings.HasPrefix(imp, pkg+"/") || slices.Contains([]string{module + "/connectors/rest", module + "/connectors/internal/vpnrc", module + "/coordinator/chores", module + "/internal/ociimage"}, imp))
			if to > from || (to == from && !sameOK) {
				t.Errorf("%s (%s) imports %s (%s): imports must point down", pkg, layers[from].name, imp, layers[to].name)
			}
		}
	}
}
