//go:build !svc_crashtest

package main

import "log/slog"

// crashTestHook is the release build's: no engine hook. The crash tests
// build svc with -tags svc_crashtest (stall_crashtest.go).
func crashTestHook(*slog.Logger) func(point, key string) { return nil }
