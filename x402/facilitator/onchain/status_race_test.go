package onchain_test

import (
	"bytes"
	"context"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402/facilitator/onchain"
)

// TestStatusNeverExpiredWhileMinedMeanwhile: Status says an authorization
// expired only when the chain proves it can no longer be used. Here the
// settlement transaction waits in the pool; right after Status reads the
// authorization's state (unused), the transaction is mined in a block
// before validBefore, and then a block past validBefore is mined. Status
// must not answer "unused and expired" (recovery would release a payment
// that was settled).
func TestStatusNeverExpiredWhileMinedMeanwhile(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	f := e.facilitator(t, nil)
	req := requirements(t, "0.01")
	payload, p := pay(t, e.payerKey, req, time.Now())
	vb, ok := new(big.Int).SetString(p.Authorization.ValidBefore, 10)
	if !ok {
		t.Fatalf("validBefore %q", p.Authorization.ValidBefore)
	}
	e.chain.SetAutomine(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if sr, err := f.Settle(ctx, payload, req); err != nil || sr.ErrorReason != onchain.ReasonSettlementPending {
		t.Fatalf("unmined settlement: %+v %v", sr, err)
	}

	// A node that mines the pool right after answering the authorization
	// state, then a block past validBefore.
	var once sync.Once
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		resp, err := http.Post(e.chain.URL, "application/json", bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), `"eth_call"`) { // the authorization's state
			once.Do(func() {
				for _, ts := range []int64{vb.Int64() - 1, vb.Int64() + 1} {
					if err := e.chain.RPC.CallContext(context.Background(), nil, "evm_mine", ts); err != nil {
						t.Errorf("evm_mine %d: %v", ts, err)
					}
				}
			})
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	}))
	t.Cleanup(node.Close)
	observer := e.facilitator(t, func(c *onchain.Config) { c.RPCURL = node.URL })
	st, err := observer.Status(context.Background(), payload, req)
	if err != nil {
		t.Fatal(err)
	}
	if st.Expired && !st.Used {
		t.Fatalf("status %+v: unused and expired, while the authorization was used before validBefore", st)
	}
	if !e.chain.AuthorizationState(t, e.payer, nonceOf(t, p)) {
		t.Fatal("the settlement was not mined: the test proves nothing")
	}
}
