// Package nodetest finds Node.js and installs the pinned npm packages of an
// end-to-end folder (e2e/, e2e/mcp, e2e/a2a) for tests that drive official
// JavaScript peers. It is for tests only.
//
// Policy: SVC_E2E=0 skips; a missing node or npm, an old node or a failed
// install skips with the reason, except under CI=true, where it fails (CI
// must run the peers). Installs are `npm ci` from the committed lockfile,
// serialized between test processes by a lock file in the folder, because
// go test runs packages in parallel and several may share one folder.
package nodetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// InstallTimeout bounds one `npm ci`, and the wait for another one.
const InstallTimeout = 5 * time.Minute

// SkipOrFail skips t with the formatted reason, or fails it when CI=true.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("end-to-end test cannot run under CI=true: %s", msg)
	}
	t.Skipf("end-to-end test skipped: %s", msg)
}

// Node returns the path of a node binary of at least minMajor, skipping (or
// failing under CI) when there is none, and skipping under -short or when
// SVC_E2E=0.
func Node(t testing.TB, minMajor int) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: drives Node.js peers (the full go test runs them)")
	}
	if os.Getenv("SVC_E2E") == "0" {
		t.Skip("end-to-end test skipped: SVC_E2E=0")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		SkipOrFail(t, "node not found in PATH")
	}
	out, err := exec.Command(node, "-e", "process.stdout.write(process.versions.node)").Output()
	if err != nil {
		SkipOrFail(t, "node does not run: %v", err)
	}
	var major int
	if _, err := fmt.Sscanf(string(out), "%d.", &major); err != nil || major < minMajor {
		SkipOrFail(t, "node %s found, version %d or later needed", out, minMajor)
	}
	return node
}

// Installed reports whether each package is in dir/node_modules.
func Installed(dir string, pkgs ...string) bool {
	for _, p := range pkgs {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(p), "package.json")); err != nil {
			return false
		}
	}
	return true
}

// Install runs `npm ci` in dir unless ready() already holds, under the
// folder's install lock, and checks ready() afterwards.
func Install(t testing.TB, dir string, ready func() bool) {
	t.Helper()
	if ready() {
		return
	}
	if _, err := os.Stat(filepath.Join(dir, "package-lock.json")); err != nil {
		t.Fatalf("%s: the lockfile is missing: %v", dir, err)
	}
	unlock := lock(t, dir)
	defer unlock()
	if ready() { // another test process installed while we waited
		return
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		SkipOrFail(t, "%s/node_modules is incomplete and npm is not in PATH", dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), InstallTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		SkipOrFail(t, "npm ci in %s failed after %s: %v\n%s", dir, time.Since(start).Round(time.Millisecond), err, out)
	}
	t.Logf("npm ci in %s took %s", dir, time.Since(start).Round(time.Millisecond))
	if !ready() {
		SkipOrFail(t, "npm ci in %s did not install what the test needs", dir)
	}
}

// lock takes dir's install lock: a file created exclusively; one older than
// InstallTimeout is stale (its owner died) and is taken over.
func lock(t testing.TB, dir string) (unlock func()) {
	t.Helper()
	path := filepath.Join(dir, ".npm-ci.lock")
	deadline := time.Now().Add(InstallTimeout)
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			_ = f.Close()
			return func() { _ = os.Remove(path) }
		}
		if fi, serr := os.Stat(path); serr == nil && time.Since(fi.ModTime()) > InstallTimeout {
			_ = os.Remove(path)
			continue
		}
		if time.Now().After(deadline) {
			SkipOrFail(t, "waited %s for another npm ci in %s", InstallTimeout, dir)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// Setup is the usual start of an end-to-end test: a node of at least
// minMajor and dir's locked packages installed (pkgs must all be present).
// It returns the node binary.
func Setup(t testing.TB, minMajor int, dir string, pkgs ...string) string {
	t.Helper()
	node := Node(t, minMajor)
	Install(t, dir, func() bool { return Installed(dir, pkgs...) })
	return node
}
