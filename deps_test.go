package svc_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// depsOf returns the packages pkg links (go list -deps).
func depsOf(t *testing.T, pkg string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go command is not on PATH: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 || !slices.Contains(deps, "fmt") {
		t.Fatalf("go list -deps %s: %d packages, no fmt: not a dependency list", pkg, len(deps))
	}
	return deps
}

// TestNoHTTPInTheLibrary holds the root package and the gold port to their
// promise: a program that imports them to call the tools links no HTTP
// stack (net/http comes with the servers, the MT5 bridge client and the
// discovery surfaces, in their own packages).
func TestNoHTTPInTheLibrary(t *testing.T) {
	for _, pkg := range []string{".", "./xau"} {
		for _, d := range depsOf(t, pkg) {
			if d == "net/http" || strings.HasPrefix(d, "net/http/") {
				t.Errorf("%s depends on %s", pkg, d)
			}
		}
	}
}

// TestNoDatabaseDriverInTheServer: the reference server and the ledger
// take their store as an interface of their own; a program that embeds
// them with another store links neither SQLite nor PostgreSQL's driver.
func TestNoDatabaseDriverInTheServer(t *testing.T) {
	for _, pkg := range []string{"./httpserver", "./ledger"} {
		for _, d := range depsOf(t, pkg) {
			if strings.HasPrefix(d, "modernc.org/sqlite") || strings.HasPrefix(d, "github.com/jackc/pgx") || d == "github.com/seed1284c1d2/svc/store" {
				t.Errorf("%s depends on %s", pkg, d)
			}
		}
	}
}

// TestX402IsSelfContained: the payment protocol, its engine, facilitators,
// bindings and client import nothing of svc's outside x402, so that any Go
// program can use them without svc's tools, store or server.
func TestX402IsSelfContained(t *testing.T) {
	const module, x402 = "github.com/seed1284c1d2/svc", "github.com/seed1284c1d2/svc/x402"
	for _, d := range depsOf(t, "./x402/...") {
		if (d == module || strings.HasPrefix(d, module+"/")) && d != x402 && !strings.HasPrefix(d, x402+"/") {
			t.Errorf("./x402/... depends on %s", d)
		}
	}
}

// TestEngineKnowsNoScheme: the payment engine takes its schemes as
// registered mechanisms; it links no scheme's package.
func TestEngineKnowsNoScheme(t *testing.T) {
	for _, d := range depsOf(t, "./x402/engine") {
		if d == "github.com/seed1284c1d2/svc/x402/exact" || strings.HasPrefix(d, "github.com/seed1284c1d2/svc/x402/exact/") ||
			d == "github.com/seed1284c1d2/svc/x402/batch" || strings.HasPrefix(d, "github.com/seed1284c1d2/svc/x402/batch/") {
			t.Errorf("the engine depends on %s", d)
		}
	}
}
