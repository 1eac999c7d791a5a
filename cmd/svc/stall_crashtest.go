//go:build svc_crashtest

package main

import (
	"log/slog"
	"os"
)

// This file is compiled only into the crash tests' build of svc (go build
// -tags svc_crashtest): the release binary has no way to stall a payment.

// envStallAt names the environment variable of crash tests: set to one of
// the payment engine's hook points (engine.HookSettlingCommitted,
// engine.HookSettleReturned, engine.HookSettledCommitted), every paid call
// reaching that point logs it and stops there for good, so that a test can
// kill the process at a known step of a payment.
const envStallAt = "SVC_TEST_STALL_AT"

// crashTestHook returns the engine hook of envStallAt's value, nil when
// unset.
func crashTestHook(log *slog.Logger) func(point, key string) {
	point := os.Getenv(envStallAt)
	if point == "" {
		return nil
	}
	log.Warn("svc: crash-test mode: paid calls stop for good at a payment step", "env", envStallAt, "point", point)
	return func(p, key string) {
		if p != point {
			return
		}
		log.Warn("svc: paid call stalled for a crash test", "point", p, "key", key)
		select {}
	}
}
