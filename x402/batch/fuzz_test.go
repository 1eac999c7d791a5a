package batch_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/x402/batch"
)

// seedPayloads are valid payloads of each kind.
func seedPayloads(t testing.TB) []string {
	const cfg = `{"payer":"0x19E7E376E7C213B7E7e7e46cc70A5dD086DAff2A","payerAuthorizer":"0x19E7E376E7C213B7E7e7e46cc70A5dD086DAff2A","receiver":"0x00000000000000000000000000000000000000a1","receiverAuthorizer":"0x1563915e194D8CfBA1943570603F7606A3115508","token":"0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913","withdrawDelay":900,"salt":"0x0000000000000000000000000000000000000000000000000000000000000000"}`
	const v = `{"channelId":"0x1f547961b545781ad321eeaa93a9dcaacd0bd942011ebb78b56eda9b1651a596","maxClaimableAmount":"123456789","signature":"0x186c8d27ec0e42acdbcbb43f2d8d240cf5b73b566fae591741e37d88cf057ba0191dc73fbed43d75773b7c2f152b62a2db0599bbac2cd40a211c7ad33ec041241c"}`
	return []string{
		`{"type":"voucher","channelConfig":` + cfg + `,"voucher":` + v + `}`,
		`{"type":"refund","channelConfig":` + cfg + `,"voucher":` + v + `,"amount":"1500"}`,
		`{"type":"deposit","channelConfig":` + cfg + `,"voucher":` + v + `,"deposit":{"amount":"100000","authorization":{"erc3009Authorization":{"validAfter":"0","validBefore":"1770000000","salt":"0x5a5a","signature":"0x01"}}}}`,
	}
}

// ParsePayload never panics, and what it accepts travels back unchanged:
// Payment.Payload parses to the same Payment.
func FuzzParsePayload(f *testing.F) {
	for _, s := range seedPayloads(f) {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"type":"deposit"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := batch.ParsePayload(raw)
		if err != nil {
			if reasonOf(err) == "" || !strings.HasPrefix(err.Error(), "x402 batch-settlement: ") {
				t.Fatalf("refusal without a reason: %v", err)
			}
			return
		}
		b, err := json.Marshal(p.Payload())
		if err != nil {
			t.Fatal(err)
		}
		q, err := batch.ParsePayload(b)
		if err != nil {
			t.Fatalf("re-encoded %s: %v", b, err)
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("round trip changed the payment:\n%+v\n%+v", p, q)
		}
	})
}

// ParseClaimPayload never panics; what it accepts has rows whose total is
// at most their ceiling, and its rows travel back unchanged.
func FuzzParseClaimPayload(f *testing.F) {
	f.Add([]byte(`{"type":"claim","claims":[{"voucher":{"channel":{"payer":"0x19E7E376E7C213B7E7e7e46cc70A5dD086DAff2A","payerAuthorizer":"0x0000000000000000000000000000000000000000","receiver":"0x00000000000000000000000000000000000000a1","receiverAuthorizer":"0x1563915e194D8CfBA1943570603F7606A3115508","token":"0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913","withdrawDelay":900,"salt":"0x0000000000000000000000000000000000000000000000000000000000000000"},"maxClaimableAmount":"5000"},"signature":"0xabcd","totalClaimed":"4000"}],"claimAuthorizerSignature":"0x01"}`))
	f.Add([]byte(`{"type":"claim","claims":[]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, claims, err := batch.ParseClaimPayload(raw)
		if err != nil {
			return
		}
		rows := make([]batch.VoucherClaim, len(claims))
		for i, c := range claims {
			if c.TotalClaimed.Cmp(c.MaxClaimableAmount) > 0 {
				t.Fatalf("row %d claims above its voucher", i)
			}
			rows[i] = c.Row()
		}
		again, err := batch.ParseClaims(rows)
		if err != nil || !reflect.DeepEqual(again, claims) {
			t.Fatalf("rows do not travel back: %v", err)
		}
	})
}

// ParseExtra and ParseResponseExtra never panic on any JSON object, and
// an accepted Extra travels back unchanged through Map.
func FuzzParseExtra(f *testing.F) {
	f.Add([]byte(`{"receiverAuthorizer":"0x1563915e194D8CfBA1943570603F7606A3115508","withdrawDelay":900,"name":"USD Coin","version":"2","minDeposit":"10000"}`))
	f.Add([]byte(`{"receiverAuthorizer":"0x1563915e194D8CfBA1943570603F7606A3115508","withdrawDelay":900,"name":"USDC","version":"2","channelState":{"channelId":"0x01","balance":"1","totalClaimed":"0","withdrawRequestedAt":0,"refundNonce":"0"}}`))
	f.Add([]byte(`{"chargedAmount":"700","channelState":{"balance":"100","totalClaimed":"-1"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil {
			return
		}
		_, _ = batch.ParseResponseExtra(m)
		e, err := batch.ParseExtra(m)
		if err != nil {
			return
		}
		back, err := batch.ParseExtra(e.Map())
		if err != nil || !reflect.DeepEqual(back, e) {
			t.Fatalf("extra does not travel back: %+v %+v %v", e, back, err)
		}
	})
}
