package onchain_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402"
)

// benchConcurrency is the number of settlements in flight.
const benchConcurrency = 16

// BenchmarkSettle measures settlements per second on anvil (automine),
// from authorizations signed beforehand, 16 at a time with one relayer.
func BenchmarkSettle(b *testing.B) {
	e := newEnv(b, anviltest.Options{})
	f := e.facilitator(b, nil)
	req := requirements(b, "0.001")
	payloads := make([]x402.PaymentPayload, b.N)
	for i := range payloads {
		payloads[i], _ = pay(b, e.payerKey, req, time.Now())
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range benchConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= b.N {
					return
				}
				sr, err := f.Settle(context.Background(), payloads[i], req)
				if err != nil || !sr.Success {
					b.Errorf("settlement %d: %+v %v", i, sr, err)
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "settlements/s")
}
