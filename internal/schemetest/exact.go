package schemetest

import (
	"testing"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	exactserver "github.com/seed1284c1d2/svc/x402/exact/server"
)

// Exact returns the exact scheme of cfg as an engine's Config.Schemes.
func Exact(t testing.TB, cfg exactserver.Config) []x402.ServerScheme {
	t.Helper()
	s, err := exactserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return []x402.ServerScheme{s}
}

// offerOnly is the facilitator of an engine that only builds offers.
type offerOnly struct{ x402.Facilitator }

// ExactOffer builds the offer of routes with the exact scheme alone.
func ExactOffer(t testing.TB, resource, product string, routes ...x402.Route) *engine.Offer {
	t.Helper()
	e, err := engine.New(engine.Config{Schemes: Exact(t, exactserver.Config{Facilitator: offerOnly{}})})
	if err != nil {
		t.Fatal(err)
	}
	o, err := e.NewOffer(resource, product, routes...)
	if err != nil {
		t.Fatal(err)
	}
	return o
}
