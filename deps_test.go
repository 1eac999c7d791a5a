package svc_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestNoHTTPInTheLibrary holds the root package and the gold port to their
// promise: a program that imports them to call the tools links no HTTP
// stack (net/http comes with the servers, the MT5 bridge client and the
// discovery surfaces, in their own packages).
func TestNoHTTPInTheLibrary(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go command is not on PATH: %v", err)
	}
	for _, pkg := range []string{".", "./xau"} {
		out, err := exec.Command(goTool, "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 || !slices.Contains(deps, "fmt") {
			t.Fatalf("go list -deps %s: %d packages, no fmt: not a dependency list", pkg, len(deps))
		}
		for _, d := range deps {
			if d == "net/http" || strings.HasPrefix(d, "net/http/") {
				t.Errorf("%s depends on %s", pkg, d)
			}
		}
	}
}
