package discovery

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/discovery/documents"
	"github.com/seed1284c1d2/svc/discovery/stats"
	"github.com/seed1284c1d2/svc/x402"
)

func discCount(cs []stats.Count, name string) int64 {
	for _, c := range cs {
		if c.Name == name {
			return c.Count
		}
	}
	return 0
}

func TestStatsPrivacy(t *testing.T) {
	s, base := discServe(t, nil, func(s *Service) http.Handler { return s.Stats().Middleware(s.Handler()) })
	const (
		ip     = "203.0.113.77"
		wallet = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
		token  = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZ2VudC00MiJ9.c2lnbmF0dXJl"
		ua     = "SecretAgent/9.9 (owner=bob)"
	)
	hdr := map[string]string{"X-Forwarded-For": ip, "X-Real-Ip": ip, "User-Agent": ua, x402.HeaderPaymentSignature: "c2VjcmV0LXBheW1lbnQ=", "Authorization": "Bearer " + token}
	discDo(t, "GET", base+"/api/find?q=gold&wallet="+wallet+"&src="+wallet, "", hdr)
	discDo(t, "GET", base+"/api/find?q=gold&src=alice@example.com", "", hdr)
	discDo(t, "POST", base+"/api/route", `{"query":"jwt","input":{"token":"`+token+`"}}`, hdr)
	discDo(t, "POST", base+"/api/route", `{"query":"evm address","input":{"address":"`+wallet+`"}}`, hdr)
	discDo(t, "GET", base+"/api/try?src=newsletter", "", hdr)
	for _, path := range []string{documents.PathAmplifierStats, documents.PathDistributionStat, documents.PathMagnetStats} {
		resp, body := discDo(t, "GET", base+path, "", nil)
		if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		var snap stats.Snapshot
		if err := json.Unmarshal(body, &snap); err != nil {
			t.Fatal(err)
		}
		if snap.Requests < 5 || snap.Privacy == "" || discCount(snap.Sources, "redacted") != 2 || discCount(snap.Sources, "newsletter") != 1 {
			t.Errorf("%s: %+v", path, snap)
		}
		low := strings.ToLower(string(body))
		for _, secret := range []string{ip, strings.ToLower(wallet), strings.ToLower(wallet[2:12]), "alice", token[:20], "secretagent", "bob", "c2vjcmv0", "bearer"} {
			if strings.Contains(low, strings.ToLower(secret)) {
				t.Errorf("%s leaks %q: %s", path, secret, body)
			}
		}
		if !strings.Contains(string(body), `"surface":"`+strings.Split(path, "/")[2]+`"`) {
			t.Errorf("%s: surface missing: %s", path, body)
		}
	}
	_ = s
}
