package httpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// Readiness is the body of GET /readyz.
type Readiness struct {
	// Status is "ready" (200) or "not ready" (503): the store answers and
	// holds svc's schema, and the facilitator offers the exact scheme on
	// the server's network. The terminal is reported but does not decide.
	Status string      `json:"status"`
	Checks ReadyChecks `json:"checks"`
	// Recovery says what the recovery of an interrupted settlement relies
	// on (information: it does not decide readiness).
	Recovery RecoveryHealth `json:"recovery"`
	Time     string         `json:"time"`
}

// ReadyChecks are the per-check results of GET /readyz.
type ReadyChecks struct {
	Store       ReadyCheck    `json:"store"`
	Schema      ReadyCheck    `json:"schema"`
	Facilitator ReadyCheck    `json:"facilitator"`
	Terminal    TerminalCheck `json:"terminal"`
}

// ReadyCheck is the result of one readiness check.
type ReadyCheck struct {
	Status string `json:"status"` // "up" or "down"
	Error  string `json:"error,omitempty"`
}

// TerminalCheck reports the terminal for the routes that need it. It never
// makes the server unready: the other tools are sold without it, and the
// routes that need it answer 503 before any payment while it is down.
type TerminalCheck struct {
	Status   string   `json:"status"` // "up" or "down"
	Error    string   `json:"error,omitempty"`
	Required bool     `json:"required"` // always false: not part of readiness
	Routes   []string `json:"routes"`   // the paid routes it backs
}

// livez answers GET /livez: the process serves requests.
func (s *Server) livez(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(`{"status":"alive"}` + "\n"))
}

// Ready runs the readiness checks; ready is what /readyz answers 200 for.
func (s *Server) Ready(ctx context.Context) (rd Readiness, ready bool) {
	ctx, cancel := context.WithTimeout(ctx, healthCheckTimeout+time.Second)
	defer cancel()
	rd.Time = s.now().UTC().Format(time.RFC3339)
	rd.Recovery = s.recoveryHealth()
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		sctx, cancel := context.WithTimeout(ctx, healthCheckTimeout)
		defer cancel()
		rd.Checks.Store, rd.Checks.Schema = ReadyCheck{Status: "up"}, ReadyCheck{Status: "up"}
		if err := s.cfg.Store.Ping(sctx); err != nil {
			s.log.Warn("readyz: store ping failed", "error", err)
			rd.Checks.Store = ReadyCheck{Status: "down", Error: "the store does not answer"}
			rd.Checks.Schema = ReadyCheck{Status: "down", Error: "not checked: the store does not answer"}
			return
		}
		if err := s.cfg.Store.CheckSchema(sctx); err != nil {
			s.log.Warn("readyz: store schema check failed", "error", err)
			rd.Checks.Schema = ReadyCheck{Status: "down", Error: "the store's schema is missing or outdated"}
		}
	}()
	go func() {
		defer wg.Done()
		f := s.facilitatorHealth(ctx)
		rd.Checks.Facilitator = ReadyCheck{Status: f.Status, Error: f.Error}
	}()
	go func() {
		defer wg.Done()
		th := s.terminalHealth(ctx)
		tc := TerminalCheck{Status: th.Status, Error: th.Error, Routes: []string{}}
		for _, pr := range s.paid {
			if pr.tool.Terminal {
				tc.Routes = append(tc.Routes, pr.rm.label)
			}
		}
		rd.Checks.Terminal = tc
	}()
	wg.Wait()
	ready = rd.Checks.Store.Status == "up" && rd.Checks.Schema.Status == "up" && rd.Checks.Facilitator.Status == "up"
	rd.Status = "ready"
	if !ready {
		rd.Status = "not ready"
	}
	return rd, ready
}

// readyz answers GET /readyz: 200 when ready, 503 otherwise, with the
// result of every check.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	rd, ready := s.Ready(r.Context())
	status := http.StatusOK
	if !ready {
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(rd)
}
