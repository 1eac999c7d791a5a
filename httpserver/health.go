package httpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/facilitator/onchain"
	"github.com/seed1284c1d2/svc/xau"
)

// Cache lifetimes and bounds of the /health checks.
const (
	// supportedTTL is how long a successful facilitator /supported answer
	// is reused; supportedFailTTL how long a failure is.
	supportedTTL     = 5 * time.Minute
	supportedFailTTL = 10 * time.Second
	// healthCheckTimeout bounds each check of GET /health.
	healthCheckTimeout = 2 * time.Second
)

// DevChainNote explains a dev chain (Config.DevChain) wherever it is
// reported.
const DevChainNote = "dev chain: payments settle for real on a local EVM chain run in this process (chain id 8453, test USDC); no real money moves"

// DevModeNote explains dev mode wherever it is reported.
const DevModeNote = "dev mode: the local facilitator verifies payment signatures for real but settles nothing on chain; no money moves"

// supportedCache reuses the facilitator's /supported answer.
type supportedCache struct {
	f   x402.Facilitator
	now func() time.Time

	mu   sync.Mutex
	at   time.Time
	have bool
	resp x402.SupportedResponse
	err  error
}

func (c *supportedCache) get(ctx context.Context) (x402.SupportedResponse, time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	ttl := supportedTTL
	if c.err != nil {
		ttl = supportedFailTTL
	}
	if c.have && now.Sub(c.at) < ttl {
		return c.resp, c.at, c.err
	}
	ctx, cancel := context.WithTimeout(ctx, healthCheckTimeout)
	defer cancel()
	resp, err := c.f.Supported(ctx)
	c.resp, c.err, c.at, c.have = resp, err, now, true
	return resp, now, err
}

// Health is the body of GET /health.
type Health struct {
	// Status is "ok", "degraded" (the terminal is down: the gold tools
	// answer 503, the others work) or "down" (the store or the facilitator
	// is unavailable: paid calls cannot be taken; the answer is then 503).
	Status      string            `json:"status"`
	Version     string            `json:"version"`
	DevMode     bool              `json:"devMode"`
	DevModeNote string            `json:"devModeNote,omitempty"`
	DevChain    bool              `json:"devChain,omitempty"`
	Network     string            `json:"network"`
	PayTo       string            `json:"payTo"`
	Tools       int               `json:"tools"`
	Terminal    TerminalHealth    `json:"terminal"`
	Store       ComponentHealth   `json:"store"`
	Facilitator FacilitatorHealth `json:"facilitator"`
	Recovery    RecoveryHealth    `json:"recovery"`
	UptimeSec   int64             `json:"uptimeSeconds"`
	Time        string            `json:"time"`
}

// ComponentHealth is the state of one dependency.
type ComponentHealth struct {
	Status string `json:"status"` // "up" or "down"
	Kind   string `json:"kind,omitempty"`
	Error  string `json:"error,omitempty"`
}

// TerminalHealth is the state of the trading terminal.
type TerminalHealth struct {
	Status     string `json:"status"` // "up" or "down"
	Source     string `json:"source,omitempty"`
	Terminal   string `json:"terminal,omitempty"`
	Server     string `json:"server,omitempty"`
	LastTick   string `json:"lastTick,omitempty"`
	LagSeconds int64  `json:"lagSeconds,omitempty"`
	// Market says what the lag means: "closed" during gold's weekend
	// closure (no ticks come, the lag says nothing of the terminal),
	// "open" otherwise; Stale is set when the market is open and the last
	// tick is older than StaleTickAfter (the answers' prices are old).
	Market string `json:"market,omitempty"`
	Stale  bool   `json:"stale,omitempty"`
	Error  string `json:"error,omitempty"`
}

// StaleTickAfter is the age of a terminal's last tick, while the market is
// open, from which /health and the dashboard call its data stale.
const StaleTickAfter = 5 * time.Minute

// FacilitatorHealth is the state of the payment facilitator.
type FacilitatorHealth struct {
	Status    string   `json:"status"` // "up" or "down"
	Kind      string   `json:"kind"`   // "local" (dev mode), "remote" or "onchain"
	Networks  []string `json:"networks,omitempty"`
	CheckedAt string   `json:"checkedAt,omitempty"`
	// Relayer and RelayerBalanceWei, for the on-chain facilitator: the
	// address that pays the settlements' gas (the one to fund) and its
	// native balance, when the node gave it.
	Relayer           string `json:"relayer,omitempty"`
	RelayerBalanceWei string `json:"relayerBalanceWei,omitempty"`
	Error             string `json:"error,omitempty"`
}

// health answers GET /health.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), healthCheckTimeout+time.Second)
	defer cancel()
	now := s.now()
	h := Health{
		Status:    "ok",
		Version:   s.cfg.Version,
		DevMode:   s.cfg.DevMode,
		Network:   s.network.CAIP2,
		PayTo:     s.payTo,
		Tools:     len(s.paid),
		UptimeSec: int64(now.Sub(s.metrics.start).Seconds()),
		Time:      now.UTC().Format(time.RFC3339),
		Recovery:  s.recoveryHealth(),
	}
	if s.cfg.DevMode {
		h.DevModeNote = DevModeNote
	}
	if s.cfg.DevChain {
		h.DevChain, h.DevModeNote = true, DevChainNote
	}

	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		h.Terminal = s.terminalHealth(ctx)
	}()
	go func() {
		defer wg.Done()
		h.Store = ComponentHealth{Status: "up"}
		if d, ok := s.cfg.Store.(interface{ Dialect() string }); ok {
			h.Store.Kind = d.Dialect()
		}
		sctx, cancel := context.WithTimeout(ctx, healthCheckTimeout)
		defer cancel()
		if err := s.cfg.Store.Ping(sctx); err != nil {
			s.log.Warn("health: store ping failed", "error", err)
			h.Store.Status, h.Store.Error = "down", "the store does not answer"
		}
	}()
	go func() {
		defer wg.Done()
		h.Facilitator = s.facilitatorHealth(ctx)
	}()
	wg.Wait()

	status := http.StatusOK
	switch {
	case h.Store.Status != "up" || h.Facilitator.Status != "up":
		h.Status, status = "down", http.StatusServiceUnavailable
	case h.Terminal.Status != "up":
		h.Status = "degraded"
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(h)
}

func (s *Server) terminalHealth(ctx context.Context) TerminalHealth {
	th, _, _ := s.terminalState(ctx)
	return th
}

// terminalState checks the terminal (through the health cache) and
// returns its health and the age of its last tick (haveLag false when it
// reported none).
func (s *Server) terminalState(ctx context.Context) (th TerminalHealth, lag time.Duration, haveLag bool) {
	if s.cfg.Terminal == nil {
		return TerminalHealth{Status: "down", Error: "no terminal configured"}, 0, false
	}
	hl, err := s.healthCache.Status(ctx)
	th = TerminalHealth{Status: "up", Source: string(hl.Source), Terminal: hl.Terminal, Server: hl.Server}
	if !hl.LastTick.IsZero() {
		th.LastTick = hl.LastTick.UTC().Format(time.RFC3339)
		th.LagSeconds = int64(hl.Lag.Seconds())
		lag, haveLag = hl.Lag, true
		th.Market = "open"
		if xau.WeekendClosed(s.now()) {
			th.Market = "closed"
		} else if hl.Lag > StaleTickAfter {
			th.Stale = true
		}
	}
	if err != nil || !hl.Connected {
		th.Status = "down"
		th.Error = "terminal unavailable"
		if r := xau.Reason(err); r != "" {
			th.Error = r
		}
	}
	return th, lag, haveLag
}

// facilitatorHealth checks the facilitator: its /supported answer (cached)
// must offer the exact scheme on the server's network.
func (s *Server) facilitatorHealth(ctx context.Context) FacilitatorHealth {
	f := FacilitatorHealth{Status: "up", Kind: "remote"}
	if s.cfg.DevMode {
		f.Kind = "local"
	}
	if rl, ok := s.cfg.Facilitator.(relayer); ok {
		f.Kind, f.Relayer = "onchain", rl.Relayer().Hex()
		if b, err := rl.RelayerBalance(ctx); err == nil {
			f.RelayerBalanceWei = b.String()
		}
		if err := rl.Ready(ctx); err != nil {
			s.log.Warn("health: the on-chain facilitator is not ready", "error", err, "relayer", f.Relayer)
			f.Status, f.Error = "down", "the on-chain facilitator cannot settle: "+onchainReason(err)
			var ue *onchain.UnavailableError
			if errors.As(err, &ue) && ue.Reason == onchain.UnavailableOutOfGas {
				f.Error += "; fund the relayer " + f.Relayer
			}
			return f
		}
	}
	resp, at, err := s.supported.get(ctx)
	f.CheckedAt = at.UTC().Format(time.RFC3339)
	if err != nil {
		s.log.Warn("health: facilitator /supported failed", "error", err)
		f.Status, f.Error = "down", "the facilitator does not answer /supported"
		return f
	}
	seen := map[string]bool{}
	for _, k := range resp.Kinds {
		if k.Scheme == x402.SchemeExact && !seen[k.Network] {
			seen[k.Network] = true
			f.Networks = append(f.Networks, k.Network)
		}
	}
	sort.Strings(f.Networks)
	if !seen[s.network.CAIP2] {
		f.Status, f.Error = "down", "the facilitator does not support the exact scheme on "+s.network.CAIP2
	}
	return f
}

// onchainReason is what a free surface says of an on-chain facilitator that
// cannot settle: the reason's code and a fixed explanation, never the
// error's text, which may carry the RPC URL and the API key in it (the
// log has the whole error).
func onchainReason(err error) string {
	var ue *onchain.UnavailableError
	if !errors.As(err, &ue) {
		return "see the server's log"
	}
	switch ue.Reason {
	case onchain.UnavailableOutOfGas:
		return ue.Reason + " (the relayer's balance cannot pay for the gas of a settlement)"
	case onchain.UnavailableFeeCap:
		return ue.Reason + " (the base fee is at or above the fee cap)"
	case onchain.UnavailableRPC:
		return ue.Reason + " (the RPC endpoint does not answer)"
	case onchain.UnavailableClosed:
		return ue.Reason + " (the server is stopping)"
	}
	return ue.Reason
}
