package httpserver_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestCORSPaidRoutes: a browser can pay a tool from any origin. Every paid
// route answers its CORS preflight (204, its method, the payment headers
// allowed) and its answers carry Access-Control-Allow-Origin with
// PAYMENT-REQUIRED / PAYMENT-RESPONSE exposed.
func TestCORSPaidRoutes(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	for _, rt := range paidRoutes {
		t.Run(rt.key, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodOptions, f.url+rt.path, nil)
			req.Header.Set("Origin", "https://agent.example")
			req.Header.Set("Access-Control-Request-Method", rt.method)
			req.Header.Set("Access-Control-Request-Headers", "content-type,payment-signature,access-control-expose-headers")
			resp, body := do(t, req)
			h := resp.Header
			if resp.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "*" ||
				h.Get("Access-Control-Allow-Methods") != rt.method+", OPTIONS" || h.Get("Access-Control-Max-Age") == "" {
				t.Fatalf("preflight: %d %v %s", resp.StatusCode, h, body)
			}
			if got := strings.ToLower(h.Get("Access-Control-Allow-Headers")); !strings.Contains(got, "payment-signature") || !strings.Contains(got, "content-type") {
				t.Fatalf("Access-Control-Allow-Headers %q", got)
			}

			// A request-header list that is not a plain list of names gets
			// the fixed list.
			req.Header.Set("Access-Control-Request-Headers", "x-a, (x-b)")
			resp, _ = do(t, req)
			if got := resp.Header.Get("Access-Control-Allow-Headers"); !strings.Contains(got, "PAYMENT-SIGNATURE") || !strings.Contains(got, "X-PAYMENT") {
				t.Fatalf("fixed Access-Control-Allow-Headers %q", got)
			}

			// A plain OPTIONS lists the methods.
			plain, _ := http.NewRequest(http.MethodOptions, f.url+rt.path, nil)
			resp, _ = do(t, plain)
			if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Allow") != rt.method+", OPTIONS" {
				t.Fatalf("OPTIONS: %d Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
			}

			// The 402 and an invalid input's 400 are readable cross-origin.
			tool := f.tool(t, rt.key)
			for _, in := range []string{string(tool.ExampleInput), `{"nope":1}`} {
				r := f.request(t, tool, in)
				r.Header.Set("Origin", "https://agent.example")
				resp, body := do(t, r)
				if resp.StatusCode != http.StatusPaymentRequired && resp.StatusCode != http.StatusBadRequest {
					t.Fatalf("%s: %d %s", in, resp.StatusCode, body)
				}
				if resp.Header.Get("Access-Control-Allow-Origin") != "*" {
					t.Fatalf("%d answer without Access-Control-Allow-Origin: %v", resp.StatusCode, resp.Header)
				}
				if resp.StatusCode == http.StatusPaymentRequired && !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "PAYMENT-REQUIRED") {
					t.Fatalf("402 does not expose PAYMENT-REQUIRED: %v", resp.Header)
				}
			}
		})
	}
	// Other methods are still 405, listing OPTIONS.
	req, _ := http.NewRequest(http.MethodPut, f.url+"/api/risk-levels", nil)
	resp, _ := do(t, req)
	if resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(resp.Header.Get("Allow"), "OPTIONS") {
		t.Fatalf("PUT: %d Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}
