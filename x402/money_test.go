package x402

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/seed1284c1d2/svc/x402/internal/wire"
)

func TestPriceToAtomic(t *testing.T) {
	for _, c := range []struct {
		price string
		dec   int
		want  string
	}{
		{"0.0034", 6, "3400"},
		{"0.005", 6, "5000"},
		{"1.50", 6, "1500000"},
		{"0.0025", 6, "2500"},
		{"0.000001", 6, "1"},
		{"$0.01", 6, "10000"},
		{"1", 6, "1000000"},
		{"10.", 6, ""},
		{"0.0050000", 6, "5000"},
		{"007", 6, "7000000"},
		{"123456789.123456", 6, "123456789123456"},
		{"5", 0, "5"},
		{"1.5", 18, "1500000000000000000"},
	} {
		got, err := PriceToAtomic(c.price, c.dec)
		if c.want == "" {
			if err == nil {
				t.Errorf("%q: got %s, want an error", c.price, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("PriceToAtomic(%q, %d) = %q, %v; want %q", c.price, c.dec, got, err, c.want)
		}
	}
}

func TestPriceToAtomicErrors(t *testing.T) {
	_, err := PriceToAtomic("0.0000001", 6)
	if !errors.Is(err, ErrPriceTooFine) || !strings.Contains(err.Error(), "price finer than the asset's smallest unit") {
		t.Fatalf("too fine: %v", err)
	}
	if _, err := PriceToAtomic("0.0000015", 6); !errors.Is(err, ErrPriceTooFine) {
		t.Fatalf("too fine: %v", err)
	}
	for _, bad := range []string{"", "$", "0", "0.000", "$0", "-1", "+1", "-0.5", "1e-3", "1E2", "0x10", ".5", "1.", "1..2",
		" 1", "1 ", "1,5", "1_000", "NaN", "Inf", "abc", "$$1", "１", strings.Repeat("9", 100)} {
		if got, err := PriceToAtomic(bad, 6); err == nil {
			t.Errorf("%q: got %q, want an error", bad, got)
		}
	}
	if _, err := PriceToAtomic("1", -1); err == nil {
		t.Error("negative decimals accepted")
	}
}

func TestAtomicToPrice(t *testing.T) {
	for _, c := range []struct{ atomic, want string }{
		{"3400", "0.0034"}, {"5000", "0.005"}, {"1500000", "1.5"}, {"1", "0.000001"}, {"0", "0"},
		{"1000000", "1"}, {"123456789123456", "123456789.123456"}, {"000100", "0.0001"},
	} {
		got, err := AtomicToPrice(c.atomic, 6)
		if err != nil || got != c.want {
			t.Errorf("AtomicToPrice(%q) = %q, %v; want %q", c.atomic, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "-1", "1.5", "1e3", " 1"} {
		if _, err := AtomicToPrice(bad, 6); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestPriceAtomicRoundTrip: for random positive atomic amounts,
// PriceToAtomic(AtomicToPrice(a)) == a.
func TestPriceAtomicRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		a := strconv.FormatUint(r.Uint64N(1<<uint(1+r.IntN(62)))+1, 10)
		dec := r.IntN(19)
		p, err := AtomicToPrice(a, dec)
		if err != nil {
			t.Fatal(err)
		}
		back, err := PriceToAtomic(p, dec)
		if err != nil || back != a {
			t.Fatalf("%s (%d decimals) → %s → %s, %v", a, dec, p, back, err)
		}
	}
}

func TestParseUint256(t *testing.T) {
	max := "115792089237316195423570985008687907853269984665640564039457584007913129639935"
	w, ok := wire.ParseUint256(max)
	if !ok || w != [32]byte(common.MaxHash) {
		t.Fatalf("2^256-1: %x %v", w, ok)
	}
	if _, ok := wire.ParseUint256("115792089237316195423570985008687907853269984665640564039457584007913129639936"); ok {
		t.Fatal("2^256 accepted")
	}
	w, ok = wire.ParseUint256("18446744073709551616") // 2^64, the big.Int path
	if !ok || w[23] != 1 || wire.CompareUint256(w, wire.Uint256FromUint64(^uint64(0))) <= 0 {
		t.Fatalf("2^64: %x", w)
	}
	if w, ok := wire.ParseUint256("0000000000000000000000000000000000000000000000000000000000000000000000000000000000000012"); !ok || w != wire.Uint256FromUint64(12) {
		t.Fatal("leading zeros")
	}
}

func TestNetworks(t *testing.T) {
	for _, c := range []struct {
		id, caip, v1, usdc, name string
		chain                    int64
	}{
		{"eip155:8453", "eip155:8453", "base", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", "USD Coin", 8453},
		{"base", "eip155:8453", "base", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", "USD Coin", 8453},
		{"eip155:84532", "eip155:84532", "base-sepolia", "0x036CbD53842c5426634e7929541eC2318f3dCF7e", "USDC", 84532},
		{"base-sepolia", "eip155:84532", "base-sepolia", "0x036CbD53842c5426634e7929541eC2318f3dCF7e", "USDC", 84532},
	} {
		n, ok := LookupNetwork(c.id)
		if !ok || n.CAIP2 != c.caip || n.V1Name != c.v1 || n.USDC != c.usdc || n.EIP712Name != c.name || n.EIP712Version != "2" || n.ChainID != c.chain || n.USDCDecimals != 6 {
			t.Errorf("LookupNetwork(%q) = %+v, %v", c.id, n, ok)
		}
		if common.HexToAddress(n.USDC).Hex() != n.USDC {
			t.Errorf("%s: USDC address not checksummed", c.id)
		}
		if m, ok := NetworkFromChainID(c.chain); !ok || m != n {
			t.Errorf("NetworkFromChainID(%d) = %+v", c.chain, m)
		}
	}
	for _, bad := range []string{"", "BASE", "eip155:1", "eip155:8453 ", "Base"} {
		if _, ok := LookupNetwork(bad); ok {
			t.Errorf("%q found", bad)
		}
	}
	ns := Networks()
	ns[0].USDC = "0x0"
	if n, _ := LookupNetwork(NetworkBase); n.USDC == "0x0" {
		t.Fatal("Networks exposes the table")
	}
	if mustNetwork(t, NetworkBase).Testnet || !mustNetwork(t, NetworkBaseSepolia).Testnet {
		t.Fatal("testnet flags")
	}
}
