package httpserver

import (
	"context"
	"fmt"
	"io"
	"math/big"
	"time"

	"github.com/seed1284c1d2/svc/x402"
)

// relayer is a facilitator that sends settlement transactions itself (the
// on-chain facilitator): its gas balance and pending transactions are
// metrics, and its readiness is part of /health.
type relayer interface {
	RelayerBalance(ctx context.Context) (*big.Int, error)
	Pending() int
	Ready(ctx context.Context) error
}

// writeRelayerMetrics adds the relayer's gauges when f settles on chain.
func writeRelayerMetrics(ctx context.Context, w io.Writer, f x402.Facilitator) {
	rl, ok := f.(relayer)
	if !ok {
		return
	}
	fmt.Fprintf(w, "# HELP svc_relayer_pending_transactions Settlement transactions sent and not yet mined.\n# TYPE svc_relayer_pending_transactions gauge\nsvc_relayer_pending_transactions %d\n", rl.Pending())
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if b, err := rl.RelayerBalance(ctx); err == nil {
		fmt.Fprintf(w, "# HELP svc_relayer_balance_wei Native balance of the relayer (pays the settlements' gas).\n# TYPE svc_relayer_balance_wei gauge\nsvc_relayer_balance_wei %s\n", b)
	}
}
