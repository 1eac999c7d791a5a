package claimer

import (
	"errors"
	"fmt"
	"math/big"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of a claim (the outcome label of svc_batch_claims_total).
const (
	// OutcomeClaimed: the facilitator's claim transaction covers the rows.
	OutcomeClaimed = "claimed"
	// OutcomeRecovered: a pending claim found covered on chain after a
	// restart or a lost answer.
	OutcomeRecovered = "recovered"
	// OutcomeRefused: the facilitator refused the claim (its rows are
	// claimed again later).
	OutcomeRefused = "refused"
	// OutcomeSuperseded: a pending claim that can no longer be sent as
	// signed (the chain changed); its channels are claimed anew.
	OutcomeSuperseded = "superseded"
	// OutcomeError: no answer could be had; the claim stays pending.
	OutcomeError = "error"
)

// metrics are the claimer's collectors.
type metrics struct {
	unclaimed      *prometheus.GaugeVec
	channels       *prometheus.GaugeVec
	oldest         *prometheus.GaugeVec
	withdrawals    *prometheus.GaugeVec
	claims         *prometheus.CounterVec
	claimedAmount  *prometheus.CounterVec
	gas            *prometheus.CounterVec
	claimedChannel *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, network string) (*metrics, error) {
	m := &metrics{
		unclaimed: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "svc_batch_unclaimed_atomic",
			Help: "Charged and not yet claimed on chain, in the token's atomic units, by network (as of the claimer's last pass)."}, []string{"network"}),
		channels: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "svc_batch_unclaimed_channels",
			Help: "Channels with unclaimed charges, by network."}, []string{"network"}),
		oldest: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "svc_batch_oldest_unclaimed_seconds",
			Help: "Age of the oldest unclaimed voucher (since its channel's last charge), by network; 0 when nothing is unclaimed."}, []string{"network"}),
		withdrawals: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "svc_batch_pending_withdrawals",
			Help: "Channels with unclaimed charges whose payer initiated a withdrawal, by network."}, []string{"network"}),
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "svc_batch_claims_total",
			Help: "Claims (claimWithSignature of many channels) by network and outcome."}, []string{"network", "outcome"}),
		claimedAmount: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "svc_batch_claimed_atomic_total",
			Help: "Amount claimed on chain by the claimer, in the token's atomic units, by network."}, []string{"network"}),
		claimedChannel: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "svc_batch_claimed_channels_total",
			Help: "Channel rows claimed on chain, by network."}, []string{"network"}),
		gas: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "svc_batch_gas_used_total",
			Help: "Gas used by the claimer's transactions, by network and operation (claim, sweep, refund)."}, []string{"network", "op"}),
	}
	if reg != nil {
		var err error
		if m.unclaimed, err = register(reg, m.unclaimed); err != nil {
			return nil, err
		}
		if m.channels, err = register(reg, m.channels); err != nil {
			return nil, err
		}
		if m.oldest, err = register(reg, m.oldest); err != nil {
			return nil, err
		}
		if m.withdrawals, err = register(reg, m.withdrawals); err != nil {
			return nil, err
		}
		if m.claims, err = register(reg, m.claims); err != nil {
			return nil, err
		}
		if m.claimedAmount, err = register(reg, m.claimedAmount); err != nil {
			return nil, err
		}
		if m.claimedChannel, err = register(reg, m.claimedChannel); err != nil {
			return nil, err
		}
		if m.gas, err = register(reg, m.gas); err != nil {
			return nil, err
		}
	}
	for _, o := range []string{OutcomeClaimed, OutcomeRecovered, OutcomeRefused, OutcomeSuperseded, OutcomeError} {
		m.claims.WithLabelValues(network, o)
	}
	for _, op := range []string{"claim", "sweep", "refund"} {
		m.gas.WithLabelValues(network, op)
	}
	return m, nil
}

// register registers c with reg, or returns the collector already
// registered under its name (claimers of several networks share one
// registry).
func register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if ex, ok := are.ExistingCollector.(T); ok {
				return ex, nil
			}
		}
		return c, fmt.Errorf("claimer: register metrics: %w", err)
	}
	return c, nil
}

// float returns v as a float64 (metrics only).
func float(v *big.Int) float64 {
	f, _ := new(big.Float).SetInt(v).Float64()
	return f
}
