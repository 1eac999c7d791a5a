package x402

import (
	"errors"
	"strings"
)

// Network describes an EVM network on which the exact scheme is offered with
// USDC and an EIP-3009 transferWithAuthorization.
//
// The EIP-712 domain of the token is {name: EIP712Name, version:
// EIP712Version, chainId: ChainID, verifyingContract: USDC}. The name differs
// between networks ("USD Coin" on Base, "USDC" on Base Sepolia): a signature
// made with the wrong name recovers to another address.
type Network struct {
	// CAIP2 is the x402 v2 identifier, e.g. "eip155:8453".
	CAIP2 string
	// V1Name is the x402 v1 identifier, e.g. "base".
	V1Name string
	// ChainID is the EIP-155 chain id.
	ChainID int64
	// USDC is the EIP-55 checksummed address of the USDC contract.
	USDC string
	// USDCDecimals is the number of decimals of USDC (6).
	USDCDecimals int
	// EIP712Name and EIP712Version are USDC's EIP-712 domain name and version.
	EIP712Name    string
	EIP712Version string
	// Testnet is true for networks whose tokens have no value.
	Testnet bool
}

// Network identifiers of the networks this package knows.
const (
	NetworkBase        = "eip155:8453"
	NetworkBaseSepolia = "eip155:84532"
)

// usdcDecimals is the number of decimals of USDC on every EVM network.
const usdcDecimals = 6

// knownNetworks returns the table of supported networks. It is a function
// returning a fresh array so that no caller can alter the table.
func knownNetworks() [2]Network {
	return [...]Network{
		{
			CAIP2:         NetworkBase,
			V1Name:        "base",
			ChainID:       8453,
			USDC:          "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
			USDCDecimals:  usdcDecimals,
			EIP712Name:    "USD Coin",
			EIP712Version: "2",
		},
		{
			CAIP2:         NetworkBaseSepolia,
			V1Name:        "base-sepolia",
			ChainID:       84532,
			USDC:          "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
			USDCDecimals:  usdcDecimals,
			EIP712Name:    "USDC",
			EIP712Version: "2",
			Testnet:       true,
		},
	}
}

// Networks returns every network this package knows, in a fresh slice.
func Networks() []Network {
	t := knownNetworks()
	return t[:]
}

// LookupNetwork finds a network by its CAIP-2 identifier ("eip155:8453") or
// its x402 v1 name ("base"). Matching is exact (identifiers are lower case).
func LookupNetwork(id string) (Network, bool) {
	for _, n := range knownNetworks() {
		if id == n.CAIP2 || id == n.V1Name {
			return n, true
		}
	}
	return Network{}, false
}

// NetworkFromChainID finds a known network by its EIP-155 chain id.
func NetworkFromChainID(chainID int64) (Network, bool) {
	for _, n := range knownNetworks() {
		if n.ChainID == chainID {
			return n, true
		}
	}
	return Network{}, false
}

// ErrUnknownNetwork is wrapped by the errors of functions given a network
// identifier this package does not know.
var ErrUnknownNetwork = errors.New("x402: unknown network")

// knownNetworkList names the known networks for error messages.
func knownNetworkList() string {
	var b strings.Builder
	for i, n := range knownNetworks() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n.CAIP2)
	}
	return b.String()
}

// DefaultMaxTimeoutSeconds is the maxTimeoutSeconds announced when a Route
// leaves it unset: 300 s, as the reference TypeScript servers (the Go
// reference uses 60). It bounds how long the payer's authorization needs to
// stay valid for the request, the handler and the settlement.
const DefaultMaxTimeoutSeconds = 300
