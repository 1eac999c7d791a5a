// Command library calls svc's tools as plain Go functions: no server, no
// payment, no I/O.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/seed1284c1d2/svc"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "library:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	// Stop and target of a long trade at 3500 with a 0.05% stop and a
	// 0.04% target.
	levels, err := svc.RiskLevels(ctx, svc.RiskLevelsRequest{
		Entry:     svc.N(3500),
		Direction: svc.Long,
		SlPct:     svc.MustNumber("0.05"),
		TpPct:     svc.MustNumber("0.04"),
	})
	if err != nil {
		return err
	}
	if err := printJSON("risk levels", levels); err != nil {
		return err
	}

	// Invalid input is an *svc.Error naming each field and the rule it
	// breaks.
	_, err = svc.RiskLevels(ctx, svc.RiskLevelsRequest{Entry: svc.N(-1), Direction: "up"})
	var se *svc.Error
	if !errors.As(err, &se) {
		return fmt.Errorf("want an *svc.Error, got %v", err)
	}
	for _, f := range se.Fields {
		fmt.Printf("invalid: %s (%s): %s\n", f.Field, f.Rule, f.Message)
	}
	return nil
}

func printJSON(label string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	fmt.Printf("%s: %s\n", label, b)
	return nil
}
