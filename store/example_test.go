package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/seed1284c1d2/svc/store"
)

// Open a SQLite store, record a settled payment and read the payer's
// membership figures.
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "svc-store-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(dir, "svc.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	payer := "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, nonce := range []string{"0x01", "0x02", "0x01"} { // the third is a duplicate
		inserted, err := s.Append(ctx, store.Settlement{
			Payer: payer, ToolKey: "risk_levels", Amount: "3400",
			Asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", Network: "eip155:8453",
			Nonce: nonce, SettledAt: at,
		})
		fmt.Println(inserted, err)
	}
	ps, _ := s.PayerStats(ctx, payer)
	fmt.Println(ps.PaidCalls, ps.FirstPaid.Format(time.RFC3339))
	// Output:
	// true <nil>
	// true <nil>
	// false <nil>
	// 2 2026-01-02T03:04:05Z
}
