package httpserver

import (
	"net/http"
	"net/http/pprof"
)

// AdminHandler returns the operator's handler, for a listener of its own
// that only operators reach (svc serve --admin-addr): GET /metrics
// (Prometheus), GET / (the dashboard: revenue, conversion, payment journal,
// dependencies, referral codes; server-rendered HTML with inline SVG, no
// script, nothing fetched from elsewhere), GET /livez, /readyz and /health,
// and the runtime profiles under /debug/pprof/ (not the command line,
// /debug/pprof/cmdline, where credentials given as flags would be). It has
// no rate limit and no access log: do not expose it publicly.
func (s *Server) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metricsHandler())
	mux.HandleFunc("GET /{$}", s.dashboard)
	mux.HandleFunc("GET /livez", s.livez)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		mux.ServeHTTP(w, r)
	})
}
