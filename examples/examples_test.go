package examples_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// names are the example programs, each a main package in ./NAME.
var names = []string{"library", "embed", "middleware", "pay", "mcp-tool", "a2a-agent"}

// build compiles every example into a temporary directory and returns it.
func build(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the example programs (go build and subprocesses)")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not in PATH")
	}
	dir := t.TempDir()
	for _, n := range names {
		out, err := exec.Command(goBin, "build", "-o", filepath.Join(dir, n), "./"+n).CombinedOutput()
		if err != nil {
			t.Fatalf("go build ./examples/%s: %v\n%s", n, err, out)
		}
	}
	return dir
}

// runProgram runs an example to completion and returns its exit code and
// output.
func runProgram(t *testing.T, path string, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

var listeningRE = regexp.MustCompile(`listening on (http://127\.0\.0\.1:[0-9]+)`)

// startServer starts a server example on a free loopback port and returns
// its base URL; it is stopped at cleanup.
func startServer(t *testing.T, path string, args ...string) string {
	t.Helper()
	cmd := exec.Command(path, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s did not stop cleanly: %v", filepath.Base(path), err)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("%s did not stop on SIGINT", filepath.Base(path))
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("%s printed no address: %v", filepath.Base(path), err)
	}
	m := listeningRE.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("%s: %q does not name the address", filepath.Base(path), line)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return m[1]
}

func status(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func payerEnv(t *testing.T) []string {
	t.Helper()
	var k [32]byte
	if _, err := rand.Read(k[:]); err != nil {
		t.Fatal(err)
	}
	return []string{"PAYER_KEY=0x" + hex.EncodeToString(k[:])}
}

func TestExamples(t *testing.T) {
	dir := build(t)
	bin := func(n string) string { return filepath.Join(dir, n) }

	t.Run("library", func(t *testing.T) {
		code, out := runProgram(t, bin("library"), nil)
		for _, want := range []string{`"stop":3498.25`, `"target":3501.4`, "invalid: direction (oneof)", "invalid: entry (gt)"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Fatalf("exit %d, output lacks %q:\n%s", code, want, out)
			}
		}
	})

	t.Run("embed and pay", func(t *testing.T) {
		base := startServer(t, bin("embed"))
		if got := status(t, base+"/api/session-state"); got != http.StatusPaymentRequired {
			t.Fatalf("unpaid call: %d", got)
		}
		if got := status(t, base+"/health"); got != http.StatusOK {
			t.Fatalf("/health: %d", got)
		}
		code, out := runProgram(t, bin("pay"), payerEnv(t), "-url", base+"/api/risk-levels",
			"-body", `{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`)
		for _, want := range []string{"status: 200", `"stop":3498.25`, "paid by 0x", "on eip155:8453"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Fatalf("exit %d, output lacks %q:\n%s", code, want, out)
			}
		}
	})

	t.Run("middleware and pay", func(t *testing.T) {
		base := startServer(t, bin("middleware"), "-journal", filepath.Join(t.TempDir(), "journal.db"))
		if got := status(t, base+"/hello"); got != http.StatusOK {
			t.Fatalf("free route: %d", got)
		}
		if got := status(t, base+"/fortune"); got != http.StatusPaymentRequired {
			t.Fatalf("unpaid call: %d", got)
		}
		code, out := runProgram(t, bin("pay"), payerEnv(t), "-url", base+"/fortune")
		for _, want := range []string{"status: 200", "a paid answer arrives", "paid by 0x"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Fatalf("exit %d, output lacks %q:\n%s", code, want, out)
			}
		}
		// Over the spending cap, the client refuses to pay.
		code, out = runProgram(t, bin("pay"), payerEnv(t), "-url", base+"/fortune", "-max", "0.0005")
		if code != 1 || !strings.Contains(out, "over the maximum") {
			t.Fatalf("over the cap: exit %d\n%s", code, out)
		}
	})
}
