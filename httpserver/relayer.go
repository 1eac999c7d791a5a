package httpserver

import (
	"context"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/prometheus/client_golang/prometheus"
)

// relayer is a facilitator that sends settlement transactions itself (the
// on-chain facilitator): its gas balance and pending transactions are
// metrics, and its readiness is part of /health and /readyz.
type relayer interface {
	Relayer() common.Address
	RelayerBalance(ctx context.Context) (*big.Int, error)
	Pending() int
	Ready(ctx context.Context) error
}

// relayerCollector exposes the relayer's gauges at scrape time.
type relayerCollector struct {
	rl               relayer
	pending, balance *prometheus.Desc
}

func newRelayerCollector(rl relayer) relayerCollector {
	return relayerCollector{
		rl: rl,
		pending: prometheus.NewDesc("svc_relayer_pending_transactions",
			"Settlement transactions sent and not yet mined.", nil, nil),
		balance: prometheus.NewDesc("svc_relayer_balance_wei",
			"Native balance of the relayer (pays the settlements' gas), in wei.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c relayerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.balance
}

// Collect implements prometheus.Collector. A balance the node does not
// give within two seconds is left out of the scrape.
func (c relayerCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(c.rl.Pending()))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if b, err := c.rl.RelayerBalance(ctx); err == nil {
		f, _ := new(big.Float).SetInt(b).Float64()
		ch <- prometheus.MustNewConstMetric(c.balance, prometheus.GaugeValue, f)
	}
}
