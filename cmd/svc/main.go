// Command svc runs and uses the svc reference server: small deterministic
// tools for agents, sold per call with x402 v2 payments (USDC on Base).
//
// Usage:
//
//	svc serve [flags]                 run the server (dev mode with no configuration)
//	svc call <tool-key> [flags]       pay for one call with the Go x402 client
//	svc tools [--url URL] [--json]    list the tools
//	svc payments [--state S]          the payment journal by state
//	svc ledger [--from D] [--to D]    settled payments of a period (CSV or JSON)
//	svc devchain                      a local EVM chain to try on-chain settlement
//	svc version                       print the version
//	svc help [command]                print help
//
// Every serve flag has an SVC_* environment variable (the flag wins). With
// no configuration, `svc serve` starts in dev mode: loopback only, a SQLite
// file in ./svc-data, the simulated gold terminal and the local facilitator,
// which verifies payment signatures for real but settles nothing on chain.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/seed1284c1d2/svc/internal/envflag"
)

// apiVersion is the version of the service's HTTP interface (its routes,
// inputs and answers), printed by --version next to the build's.
const apiVersion = "2.0.0"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the exit code: 0 success,
// 1 failure, 2 usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(ctx, args[1:], stderr, getenv)
	case "call":
		err = call(ctx, args[1:], stdout, stderr, getenv)
	case "pay":
		err = payCmd(ctx, args[1:], os.Stdin, stdout, stderr, getenv)
	case "tools":
		err = listTools(ctx, args[1:], stdout, stderr, getenv)
	case "payments":
		err = payments(ctx, args[1:], stdout, stderr, getenv)
	case "ledger":
		err = ledgerCmd(ctx, args[1:], stdout, stderr, getenv)
	case "facilitator":
		err = facilitatorCmd(ctx, args[1:], stderr, getenv)
	case "reconcile":
		err = reconcile(ctx, args[1:], stdout, stderr, getenv)
	case "devchain":
		err = devchainCmd(ctx, args[1:], stdout, stderr, getenv)
	case "batch":
		err = batchCmd(ctx, args[1:], stdout, stderr, getenv)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, versionString())
		return 0
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			return run(ctx, []string{args[1], "-h"}, stdout, stderr, getenv)
		}
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "svc: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(envflag.UsageError)):
		fmt.Fprintln(stderr, "svc:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "svc:", err)
		return 1
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `svc — small deterministic tools for agents, sold per call with x402 (USDC on Base)

Usage:
  svc serve [flags]                       run the server; no flags = dev mode
  svc call <tool-key> [flags]             pay for one call of an svc tool with the Go x402 client
  svc pay [-X M] [-d BODY] [-H H] URL     pay one request to any x402 server (curl's habits;
                                          --dry-run prints the offer)
  svc tools [--url URL] [--json]          list the tools (local catalog, or a server's)
  svc payments [--db DSN] [--state S]     the payment journal: counts by state, and the rows of
                                          one state (default unknown: to reconcile by hand)
  svc ledger [--from D] [--to D] [--format csv|json]
                                          settled payments of a period with totals per tool,
                                          day and referral code (dev-mode rows marked)
  svc facilitator --rpc-url URL [flags]   serve an on-chain x402 facilitator (relayer key in
                                          $SVC_RELAYER_KEY, bearer token in $SVC_FACILITATOR_TOKEN)
  svc reconcile --from T --to T --rpc-url URL [--db DSN]
                                          compare the settled payments of a period with the chain
  svc devchain [--addr A] [--seed S]      run a local EVM chain (chain id 8453, test USDC at Base
                                          USDC's address, funded dev accounts) and print the lines
                                          to settle on it; fund ADDR USDC, advance DURATION
  svc batch status|refund [flags]         batch-settlement channels: unclaimed charges, pending
                                          withdrawals, claims; refund idle channels (--idle 24h)
  svc version                             print the version
  svc help <command>                      flags of a command

Dev mode (svc serve with no configuration): listens on 127.0.0.1:8080 only,
stores state in ./svc-data/svc.db (SQLite), serves simulated gold data and uses
the local facilitator, which verifies payment signatures for real but settles
nothing on chain. Name a facilitator URL and a payTo wallet for production:
production settings without a facilitator URL are refused (--dev keeps dev
mode on purpose).
`)
}

// versionString is the binary's version: the module version and VCS
// revision when the build recorded them, and the interface version.
func versionString() string {
	return "svc " + buildVersion() + " (interface " + apiVersion + ")"
}

func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" && v == "devel" {
		v += "-" + rev + dirty
	}
	return v
}
