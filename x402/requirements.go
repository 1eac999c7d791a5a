package x402

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/seed1284c1d2/svc/x402/internal/clip"
	"github.com/seed1284c1d2/svc/x402/internal/wire"
)

// Route is the payment configuration of one paid resource: what it costs,
// on which network, paid to whom. Validate it when the server is built
// (Validate returns a *ConfigError), then call Requirements and
// PaymentRequired per request.
type Route struct {
	// Price in USD as a plain decimal string ("0.0034", "$0.005"); it must be
	// positive and not finer than USDC's smallest unit (0.000001).
	Price string
	// Network is the CAIP-2 id ("eip155:8453") or v1 name ("base") of a
	// known network; empty means DefaultNetwork. Requirements always carry
	// the CAIP-2 id.
	Network string
	// PayTo is the receiving wallet: 0x + 40 hex digits, all lower case or
	// EIP-55 checksummed (a mixed-case address with a wrong checksum is a
	// typo and is refused), not the zero address.
	PayTo string
	// MaxTimeoutSeconds is announced in the requirements; zero means
	// DefaultMaxTimeoutSeconds (300), at most MaxMaxTimeoutSeconds.
	MaxTimeoutSeconds int
	// Resource describes what is sold; an empty URL is filled in per
	// request by the seller (the request's full URL).
	Resource ResourceInfo
	// Bazaar, when set, adds the bazaar discovery extension to the 402.
	Bazaar *BazaarInfo
}

// DefaultNetwork is the network of a Route that names none: Base mainnet.
const DefaultNetwork = NetworkBase

// MaxMaxTimeoutSeconds bounds Route.MaxTimeoutSeconds (one day).
const MaxMaxTimeoutSeconds = 86400

// ConfigError is an invalid Route (or facilitator) configuration, found at
// construction time. Field names the offending field.
type ConfigError struct {
	Field   string
	Message string
}

// Error implements error.
func (e *ConfigError) Error() string { return "x402: config: " + e.Field + ": " + e.Message }

// Validate checks the route: known network, valid payTo, positive price
// representable in USDC atomic units, timeout in range, and a consistent
// bazaar description. The error is a *ConfigError.
func (r Route) Validate() error {
	_, err := r.Requirements()
	return err
}

// Requirements builds the exact-scheme requirements of the route: amount in
// USDC atomic units, asset = the network's USDC, payTo checksummed, extra
// {name, version} = USDC's EIP-712 domain on that network. The error is a
// *ConfigError.
func (r Route) Requirements() (PaymentRequirements, error) {
	netID := r.Network
	if netID == "" {
		netID = DefaultNetwork
	}
	n, ok := LookupNetwork(netID)
	if !ok {
		return PaymentRequirements{}, &ConfigError{"Network", fmt.Sprintf("unknown network %q (known: %s)", clip.Bytes(netID, 40), knownNetworkList())}
	}
	payTo, err := checkPayTo(r.PayTo)
	if err != nil {
		return PaymentRequirements{}, err
	}
	amount, err := PriceToAtomic(r.Price, n.USDCDecimals)
	if err != nil {
		return PaymentRequirements{}, &ConfigError{"Price", strings.TrimPrefix(err.Error(), "x402: ")}
	}
	timeout := r.MaxTimeoutSeconds
	switch {
	case timeout == 0:
		timeout = DefaultMaxTimeoutSeconds
	case timeout < 0 || timeout > MaxMaxTimeoutSeconds:
		return PaymentRequirements{}, &ConfigError{"MaxTimeoutSeconds", fmt.Sprintf("%d is outside 1..%d", timeout, MaxMaxTimeoutSeconds)}
	}
	if r.Bazaar != nil {
		if err := r.Bazaar.validate(); err != nil {
			return PaymentRequirements{}, err
		}
	}
	return PaymentRequirements{
		Scheme:            SchemeExact,
		Network:           n.CAIP2,
		Amount:            amount,
		Asset:             n.USDC,
		PayTo:             payTo,
		MaxTimeoutSeconds: timeout,
		Extra:             map[string]any{"name": n.EIP712Name, "version": n.EIP712Version},
	}, nil
}

// PaymentRequired builds the body of the PAYMENT-REQUIRED header:
// x402Version 2, the route's resource, one accepted requirement and, when
// the route has a Bazaar description, extensions.bazaar. The caller sets
// Error and Resource.URL as the request demands. The error is a
// *ConfigError.
func (r Route) PaymentRequired() (PaymentRequired, error) {
	req, err := r.Requirements()
	if err != nil {
		return PaymentRequired{}, err
	}
	pr := PaymentRequired{X402Version: Version, Resource: r.Resource, Accepts: []PaymentRequirements{req}}
	if r.Bazaar != nil {
		pr.Extensions = map[string]any{BazaarExtensionKey: r.Bazaar.Extension()}
	}
	return pr, nil
}

// checkPayTo validates a receiving address and returns it checksummed.
func checkPayTo(s string) (string, error) {
	sum, msg := wire.CheckPayTo(s)
	if msg != "" {
		return "", &ConfigError{"PayTo", msg}
	}
	return sum, nil
}

// IsValidAddress reports whether s is 0x + 40 hex digits, all lower case or
// with a valid EIP-55 checksum, and not the zero address.
func IsValidAddress(s string) bool {
	_, err := checkPayTo(s)
	return err == nil
}

// FindMatchingRequirements returns the first offered requirement that the
// accepted one (a payment's "accepted") matches: scheme, network, amount
// and maxTimeoutSeconds equal, asset and payTo equal case-insensitively,
// and every key of the offered extra present in the accepted extra with an
// equal JSON value (the client may add keys, not change or drop them).
func FindMatchingRequirements(offered []PaymentRequirements, accepted PaymentRequirements) (PaymentRequirements, bool) {
	for _, o := range offered {
		if o.Scheme == accepted.Scheme && o.Network == accepted.Network && o.Amount == accepted.Amount &&
			o.MaxTimeoutSeconds == accepted.MaxTimeoutSeconds &&
			strings.EqualFold(o.Asset, accepted.Asset) && strings.EqualFold(o.PayTo, accepted.PayTo) &&
			mwExtraSubset(o.Extra, accepted.Extra) {
			return o, true
		}
	}
	return PaymentRequirements{}, false
}

func mwExtraSubset(sub, super map[string]any) bool {
	for k, v := range sub {
		w, ok := super[k]
		if !ok {
			return false
		}
		a, err1 := json.Marshal(v)
		b, err2 := json.Marshal(w)
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			return false
		}
	}
	return true
}
