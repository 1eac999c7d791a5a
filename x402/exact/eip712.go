package exact

import (
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/internal/clip"
	"github.com/seed1284c1d2/svc/x402/internal/evmaddr"
	"github.com/seed1284c1d2/svc/x402/internal/wire"
)

// EIP-712 type strings of the EIP-3009 authorization and of the token's domain.
const (
	TransferWithAuthorizationType = "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
	EIP712DomainType              = "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"
)

// ValidAfterSkew is how far in the past NewPayload puts validAfter, so
// that a payer whose clock runs ahead is not refused (as the reference
// clients do).
const ValidAfterSkew = 600 * time.Second

// typeHashes caches keccak(TransferWithAuthorizationType) and
// keccak(EIP712DomainType) (immutable once computed).
var typeHashes = sync.OnceValue(func() [2]common.Hash {
	return [2]common.Hash{
		crypto.Keccak256Hash([]byte(TransferWithAuthorizationType)),
		crypto.Keccak256Hash([]byte(EIP712DomainType)),
	}
})

// EIP712Domain is the EIP-712 domain of an EIP-3009 token.
type EIP712Domain struct {
	Name              string
	Version           string
	ChainID           int64
	VerifyingContract common.Address
}

// Domain returns the EIP-712 domain of the network's USDC.
func Domain(n x402.Network) EIP712Domain {
	return EIP712Domain{Name: n.EIP712Name, Version: n.EIP712Version, ChainID: n.ChainID, VerifyingContract: common.HexToAddress(n.USDC)}
}

// Separator returns the domain separator: keccak256(typeHash(EIP712Domain) ‖
// keccak256(name) ‖ keccak256(version) ‖ uint256(chainId) ‖
// address(verifyingContract)), every field a 32-byte word.
func (d EIP712Domain) Separator() common.Hash {
	var buf [5 * 32]byte
	th := typeHashes()
	copy(buf[0:], th[1][:])
	nh := crypto.Keccak256Hash([]byte(d.Name))
	copy(buf[32:], nh[:])
	vh := crypto.Keccak256Hash([]byte(d.Version))
	copy(buf[64:], vh[:])
	cid := wire.Uint256FromUint64(uint64(d.ChainID))
	copy(buf[96:], cid[:])
	copy(buf[128+12:], d.VerifyingContract[:])
	return crypto.Keccak256Hash(buf[:])
}

// authWords is an Authorization parsed into its EIP-712 words.
type authWords struct {
	from, to                       common.Address
	value, validAfter, validBefore [32]byte
	nonce                          [32]byte
}

// authFieldError is a parse failure of one authorization field.
type authFieldError struct {
	field, reason, msg string
}

func (e *authFieldError) Error() string { return "x402: authorization." + e.field + ": " + e.msg }

// parseAuthorization checks the syntax of every field: addresses 0x + 40 hex
// digits (any case; the EIP-55 checksum is not enforced, as on chain),
// numbers decimal uint256 strings, nonce 0x + 64 hex digits.
func parseAuthorization(a Authorization) (authWords, *authFieldError) {
	var w authWords
	var ok bool
	if w.from, ok = evmaddr.Parse(a.From); !ok {
		return w, &authFieldError{"from", ReasonInvalidPayload, "must be 0x followed by 40 hex digits"}
	}
	if w.to, ok = evmaddr.Parse(a.To); !ok {
		return w, &authFieldError{"to", ReasonInvalidPayload, "must be 0x followed by 40 hex digits"}
	}
	if w.value, ok = wire.ParseUint256(a.Value); !ok {
		return w, &authFieldError{"value", ReasonInvalidPayload, "must be a decimal integer below 2^256"}
	}
	if w.validAfter, ok = wire.ParseUint256(a.ValidAfter); !ok {
		return w, &authFieldError{"validAfter", ReasonInvalidPayload, "must be a decimal integer below 2^256"}
	}
	if w.validBefore, ok = wire.ParseUint256(a.ValidBefore); !ok {
		return w, &authFieldError{"validBefore", ReasonInvalidPayload, "must be a decimal integer below 2^256"}
	}
	if !evmaddr.DecodeHex(w.nonce[:], a.Nonce) {
		return w, &authFieldError{"nonce", ReasonNonceFormat, "must be 0x followed by 64 hex digits"}
	}
	return w, nil
}

// structHash is keccak256(typeHash ‖ from ‖ to ‖ value ‖ validAfter ‖
// validBefore ‖ nonce).
func (w *authWords) structHash() common.Hash {
	var buf [7 * 32]byte
	th := typeHashes()
	copy(buf[0:], th[0][:])
	copy(buf[32+12:], w.from[:])
	copy(buf[64+12:], w.to[:])
	copy(buf[96:], w.value[:])
	copy(buf[128:], w.validAfter[:])
	copy(buf[160:], w.validBefore[:])
	copy(buf[192:], w.nonce[:])
	return crypto.Keccak256Hash(buf[:])
}

// AuthorizationStructHash returns the EIP-712 struct hash of auth, or an
// error naming the first malformed field.
func AuthorizationStructHash(auth Authorization) (common.Hash, error) {
	w, ferr := parseAuthorization(auth)
	if ferr != nil {
		return common.Hash{}, ferr
	}
	return w.structHash(), nil
}

// AuthorizationDigest returns the EIP-712 digest that the payer signs for
// auth under domain d, or an error naming the first malformed field.
func AuthorizationDigest(d EIP712Domain, auth Authorization) (common.Hash, error) {
	w, ferr := parseAuthorization(auth)
	if ferr != nil {
		return common.Hash{}, ferr
	}
	return wire.TypedDataDigest(d.Separator(), w.structHash()), nil
}

// Signature errors of RecoverSigner.
var (
	// ErrSignatureFormat: not 65 bytes, or v not in {0, 1, 27, 28}, or r/s
	// zero or not below the curve order.
	ErrSignatureFormat = errors.New("x402: malformed signature")
	// ErrSignatureHighS: s is above n/2; the USDC contract refuses such
	// signatures (EIP-2), so they are refused here too.
	ErrSignatureHighS = errors.New("x402: signature s value is in the upper half of the curve order")
)

// secp256k1 group order n and n/2, big-endian.
var (
	secpN     = [32]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0xba, 0xae, 0xdc, 0xe6, 0xaf, 0x48, 0xa0, 0x3b, 0xbf, 0xd2, 0x5e, 0x8c, 0xd0, 0x36, 0x41, 0x41}
	secpHalfN = [32]byte{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x5d, 0x57, 0x6e, 0x73, 0x57, 0xa4, 0x50, 0x1d, 0xdf, 0xe9, 0x2f, 0x46, 0x68, 0x1b, 0x20, 0xa0}
)

// RecoverSigner returns the address whose key made sig over the 32-byte
// digest. sig is r ‖ s ‖ v (65 bytes) with v 27/28 or 0/1. A high s
// (s > n/2) is refused with ErrSignatureHighS; other malformed signatures
// with ErrSignatureFormat.
func RecoverSigner(digest, sig []byte) (common.Address, error) {
	if len(digest) != 32 {
		return common.Address{}, fmt.Errorf("x402: digest is %d bytes, want 32", len(digest))
	}
	if len(sig) != 65 {
		return common.Address{}, fmt.Errorf("%w: %d bytes, want 65", ErrSignatureFormat, len(sig))
	}
	var r, s [32]byte
	copy(r[:], sig[:32])
	copy(s[:], sig[32:64])
	v := sig[64]
	if v >= 27 {
		v -= 27
	}
	if v > 1 {
		return common.Address{}, fmt.Errorf("%w: v = %d, want 27, 28, 0 or 1", ErrSignatureFormat, sig[64])
	}
	var zero [32]byte
	if r == zero || s == zero || wire.CompareUint256(r, secpN) >= 0 {
		return common.Address{}, fmt.Errorf("%w: r or s out of range", ErrSignatureFormat)
	}
	if wire.CompareUint256(s, secpHalfN) > 0 {
		return common.Address{}, ErrSignatureHighS
	}
	var buf [65]byte
	copy(buf[:], sig)
	buf[64] = v
	pub, err := crypto.Ecrecover(digest, buf[:])
	if err != nil {
		return common.Address{}, fmt.Errorf("%w: recovery failed: %v", ErrSignatureFormat, err)
	}
	h := crypto.Keccak256Hash(pub[1:])
	return common.BytesToAddress(h[12:]), nil
}

// SignAuthorization signs auth for the token at asset on network n (domain
// name and version n.EIP712Name/n.EIP712Version, chain n.ChainID; an empty
// asset means n.USDC) and returns the 65-byte signature r ‖ s ‖ v as 0x-hex
// with v 27 or 28. Signing is deterministic (RFC 6979). auth.From must be
// the key's address.
func SignAuthorization(key *ecdsa.PrivateKey, n x402.Network, asset string, auth Authorization) (string, error) {
	if key == nil {
		return "", errors.New("x402: sign: nil key")
	}
	if n.EIP712Name == "" || n.EIP712Version == "" || n.ChainID <= 0 {
		return "", errors.New("x402: sign: the network lacks a chain id or the token's EIP-712 name and version")
	}
	if asset == "" {
		asset = n.USDC
	}
	contract, ok := evmaddr.Parse(asset)
	if !ok {
		return "", fmt.Errorf("x402: sign: asset %q is not an address", clip.Bytes(asset, 50))
	}
	w, ferr := parseAuthorization(auth)
	if ferr != nil {
		return "", fmt.Errorf("x402: sign: %w", ferr)
	}
	if signer := crypto.PubkeyToAddress(key.PublicKey); signer != w.from {
		return "", fmt.Errorf("x402: sign: authorization.from %s is not the key's address %s", auth.From, signer.Hex())
	}
	d := EIP712Domain{Name: n.EIP712Name, Version: n.EIP712Version, ChainID: n.ChainID, VerifyingContract: contract}
	digest := wire.TypedDataDigest(d.Separator(), w.structHash())
	sig, err := crypto.Sign(digest[:], key)
	if err != nil {
		return "", fmt.Errorf("x402: sign: %w", err)
	}
	sig[64] += 27
	return "0x" + hex.EncodeToString(sig), nil
}

// NewNonce returns 32 random bytes from crypto/rand as 0x + 64 hex digits.
func NewNonce() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("x402: nonce: %w", err)
	}
	return "0x" + hex.EncodeToString(b[:]), nil
}

// NewPayload builds and signs the exact/EIP-3009 payload paying req
// with key: from = the key's address, to = req.PayTo, value = req.Amount, a
// random 32-byte nonce, validAfter = now − ValidAfterSkew (not below 0) and
// validBefore = now + validity, where validity ≤ 0 means
// req.MaxTimeoutSeconds (x402.DefaultMaxTimeoutSeconds if that is not positive).
//
// The domain is the one req announces (network's chain id, verifyingContract
// = req.Asset, name and version from req.Extra), as the reference clients
// do; a requirement without extra.name/extra.version is refused, as are an
// unknown network, a scheme other than exact and a zero or malformed amount.
// Whether the asset and amount are acceptable is the caller's policy.
func NewPayload(key *ecdsa.PrivateKey, req x402.PaymentRequirements, now time.Time, validity time.Duration) (ExactEVMPayload, error) {
	if key == nil {
		return ExactEVMPayload{}, errors.New("x402: new payload: nil key")
	}
	if req.Scheme != x402.SchemeExact {
		return ExactEVMPayload{}, fmt.Errorf("x402: new payload: scheme %q is not %q", clip.Bytes(req.Scheme, 20), x402.SchemeExact)
	}
	n, err := mustKnownNetwork(req.Network)
	if err != nil {
		return ExactEVMPayload{}, fmt.Errorf("x402: new payload: %w", err)
	}
	name, version, ok := extraDomain(req.Extra)
	if !ok {
		return ExactEVMPayload{}, errors.New("x402: new payload: requirements lack extra.name/extra.version (the token's EIP-712 domain)")
	}
	n.EIP712Name, n.EIP712Version = name, version
	to, ok := evmaddr.Parse(req.PayTo)
	if !ok {
		return ExactEVMPayload{}, fmt.Errorf("x402: new payload: payTo %q is not an address", clip.Bytes(req.PayTo, 50))
	}
	if w, ok := wire.ParseUint256(req.Amount); !ok || w == ([32]byte{}) {
		return ExactEVMPayload{}, fmt.Errorf("x402: new payload: amount %q is not a positive integer", clip.Bytes(req.Amount, 40))
	}
	if validity <= 0 {
		secs := req.MaxTimeoutSeconds
		if secs <= 0 {
			secs = x402.DefaultMaxTimeoutSeconds
		}
		validity = time.Duration(secs) * time.Second
	}
	nonce, err := NewNonce()
	if err != nil {
		return ExactEVMPayload{}, err
	}
	after := now.Add(-ValidAfterSkew).Unix()
	if after < 0 {
		after = 0
	}
	auth := Authorization{
		From:        crypto.PubkeyToAddress(key.PublicKey).Hex(),
		To:          to.Hex(),
		Value:       req.Amount,
		ValidAfter:  fmt.Sprint(after),
		ValidBefore: fmt.Sprint(now.Add(validity).Unix()),
		Nonce:       nonce,
	}
	sig, err := SignAuthorization(key, n, req.Asset, auth)
	if err != nil {
		return ExactEVMPayload{}, err
	}
	return ExactEVMPayload{Signature: sig, Authorization: auth}, nil
}

// extraDomain reads the token's EIP-712 name and version from a
// requirements' extra; ok is false unless both are non-empty strings.
func extraDomain(extra map[string]any) (name, version string, ok bool) {
	name, _ = extra["name"].(string)
	version, _ = extra["version"].(string)
	return name, version, name != "" && version != ""
}

// mustKnownNetwork looks a network up and returns an error wrapping
// x402.ErrUnknownNetwork naming it (cut to a short prefix) when it is unknown.
func mustKnownNetwork(id string) (x402.Network, error) {
	n, ok := x402.LookupNetwork(id)
	if !ok {
		return x402.Network{}, fmt.Errorf("%w %q (known: %s)", x402.ErrUnknownNetwork, clip.Bytes(id, 40), knownNetworkList())
	}
	return n, nil
}

// knownNetworkList names the known networks for error messages.
func knownNetworkList() string {
	var ids []string
	for _, n := range x402.Networks() {
		ids = append(ids, n.CAIP2)
	}
	return strings.Join(ids, ", ")
}
