package paywall_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/seed1284c1d2/svc/paywall"
	"github.com/seed1284c1d2/svc/x402/client"
)

// Charge $0.001 for GET /weather of your own mux, and pay for it with the
// Go client. Dev mode: a local facilitator verifies the payment for real
// and settles nothing on chain; the journal is a SQLite file.
func Example() {
	dir, _ := os.MkdirTemp("", "paywall")
	defer os.RemoveAll(dir)

	pw, err := paywall.New(context.Background(), paywall.Config{
		Routes: paywall.Routes{
			"GET /weather": {Price: "$0.001", Description: "today's weather"},
		},
		PayTo:   "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
		Dev:     true, // production: FacilitatorURL: "https://x402.org/facilitator"
		Journal: filepath.Join(dir, "journal.db"),
	})
	if err != nil {
		panic(err)
	}
	defer pw.Close()

	mux := http.NewServeMux()
	mux.HandleFunc("GET /weather", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"sky":"clear"}`)
	})
	mux.HandleFunc("GET /free", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "free") })
	srv := httptest.NewServer(pw.Wrap(mux))
	defer srv.Close()

	unpaid, _ := http.Get(srv.URL + "/weather")
	unpaid.Body.Close()
	fmt.Println("without payment:", unpaid.StatusCode)

	free, _ := http.Get(srv.URL + "/free")
	free.Body.Close()
	fmt.Println("unpriced route:", free.StatusCode)

	payer, _ := client.ParseSigner("ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80")
	resp, err := client.New(payer, client.WithMaxAmount("$0.01")).Get(srv.URL + "/weather")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	settlement, _ := client.PaymentResponse(resp)
	fmt.Println("paid:", resp.StatusCode, string(body), "settled:", settlement.Success, "amount:", settlement.Amount)
	// Output:
	// without payment: 402
	// unpriced route: 200
	// paid: 200 {"sky":"clear"} settled: true amount: 1000
}
