package mcp

import "net/http"

// DisableFastPath makes a handler of NewHandler leave every paid call to
// the SDK, for tests comparing both paths.
func DisableFastPath(h http.Handler) {
	if hh := h.(*handler); hh.sdkOnly != nil {
		hh.sdk = hh.sdkOnly
	}
}
