package exact

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/internal/clip"
	"github.com/seed1284c1d2/svc/x402/internal/evmaddr"
	"github.com/seed1284c1d2/svc/x402/internal/wire"
)

// Reasons a payment is refused (VerifyError.Reason, VerifyResponse.
// InvalidReason, SettleResponse.ErrorReason). The strings are those of the
// reference facilitators where one exists; ReasonAssetMismatch,
// ReasonNonceFormat and ReasonRequirementsMismatch are this module's. The
// Verifier also refuses with x402.ReasonInvalidX402Version and
// x402.ReasonInvalidNetwork, reasons shared by every scheme. Clients should
// treat reasons as opaque.
const (
	ReasonScheme               = "invalid_exact_evm_scheme"
	ReasonNetworkMismatch      = "invalid_exact_evm_network_mismatch"
	ReasonRequirementsMismatch = "invalid_exact_evm_requirements_mismatch"
	ReasonAssetMismatch        = "invalid_exact_evm_asset_mismatch"
	ReasonMissingEIP712Domain  = "invalid_exact_evm_missing_eip712_domain"
	ReasonTokenNameMismatch    = "invalid_exact_evm_token_name_mismatch"
	ReasonTokenVersionMismatch = "invalid_exact_evm_token_version_mismatch"
	ReasonInvalidPayload       = "invalid_exact_evm_payload"
	ReasonMissingSignature     = "invalid_exact_evm_payload_missing_signature"
	ReasonSignatureFormat      = "invalid_exact_evm_signature_format"
	ReasonNonceFormat          = "invalid_exact_evm_nonce_format"
	ReasonRecipientMismatch    = "invalid_exact_evm_recipient_mismatch"
	ReasonValueMismatch        = "invalid_exact_evm_payload_authorization_value_mismatch"
	ReasonValidBefore          = "invalid_exact_evm_payload_authorization_valid_before"
	ReasonValidAfter           = "invalid_exact_evm_payload_authorization_valid_after"
	ReasonInvalidSignature     = "invalid_exact_evm_signature"
	ReasonNonceAlreadyUsed     = "invalid_exact_evm_nonce_already_used"
)

// DefaultMinValidity is the least time an authorization must remain valid
// when verified: validBefore ≥ now + 6 s, as the reference facilitators
// require (time for the settlement transaction to land).
const DefaultMinValidity = 6 * time.Second

// VerifyError is a payment refused by the local Verifier. Reason is one of
// the Reason constants; Message explains it without echoing the payload.
type VerifyError struct {
	Reason  string
	Message string
}

// Error implements error.
func (e *VerifyError) Error() string { return "x402: " + e.Reason + ": " + e.Message }

// RefusalReason implements x402.Refusal.
func (e *VerifyError) RefusalReason() string { return e.Reason }

func verifyRefuse(reason, format string, args ...any) *VerifyError {
	return &VerifyError{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Verifier checks exact/EIP-3009 payments locally, without any network
// call: everything a facilitator checks except what needs the chain (nonce
// already used on chain, balance, smart-wallet signatures, simulation).
// Only 65-byte EOA signatures are verifiable locally. The zero value is
// ready to use.
type Verifier struct {
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// MinValidity is the least remaining validity of the authorization;
	// zero means DefaultMinValidity.
	MinValidity time.Duration
	// Signers, when set, remembers recent signature recoveries: a payment
	// checked twice in one process (by the payment engine, then by a
	// local facilitator's settlement) is recovered once. Share one cache
	// between the Verifiers that check the same payments.
	Signers *SignerCache
}

// Verify checks payload against req (the server's own requirements) and
// returns the payer's address (authorization.from as sent) on success.
// On failure the error is a *VerifyError; payer is still set when the
// payload could be parsed. The checks, in order:
//
//   - x402Version is 1 or 2 (x402.ReasonInvalidX402Version);
//   - accepted.scheme and req.scheme are "exact" (ReasonScheme);
//   - accepted.network equals req.network (ReasonNetworkMismatch; for v1
//     the v1 name and the CAIP-2 id of one network are equal), a known
//     network (x402.ReasonInvalidNetwork);
//   - for v2, accepted.asset (case-insensitively), accepted.payTo
//     (case-insensitively), accepted.amount (numerically) and
//     accepted.maxTimeoutSeconds equal req's (ReasonAssetMismatch,
//     ReasonRequirementsMismatch);
//   - req.asset is the network's USDC, case-insensitively (ReasonAssetMismatch);
//   - req.extra.name and req.extra.version are present
//     (ReasonMissingEIP712Domain) and are USDC's on that network
//     (ReasonTokenNameMismatch, ReasonTokenVersionMismatch);
//   - the payload parses as an ExactEVMPayload with an authorization
//     (ReasonInvalidPayload);
//   - the signature is present (ReasonMissingSignature) and is 0x + 130 hex
//     digits (ReasonSignatureFormat);
//   - from and to are 0x + 40 hex, value/validAfter/validBefore decimal
//     uint256 (ReasonInvalidPayload), nonce 0x + 64 hex (ReasonNonceFormat);
//   - authorization.to equals req.payTo, case-insensitively
//     (ReasonRecipientMismatch);
//   - authorization.value equals req.amount numerically (ReasonValueMismatch);
//   - validBefore ≥ now + MinValidity (ReasonValidBefore);
//   - validAfter ≤ now (ReasonValidAfter);
//   - the signature is well formed with v ∈ {27, 28, 0, 1} and low s, and
//     recovers, over the EIP-712 digest, to authorization.from
//     (ReasonInvalidSignature).
func (v Verifier) Verify(payload x402.PaymentPayload, req x402.PaymentRequirements) (payer string, err error) {
	payer, sigErr, err := v.verify(payload, req, false)
	if err != nil {
		return payer, err
	}
	if sigErr != nil {
		return payer, sigErr
	}
	return payer, nil
}

// VerifyExceptSignature runs Verify's checks but leaves the signature to
// the caller: a signature that is 0x-hex bytes but not a 65-byte ECDSA
// signature of authorization.from passes, and the refusal Verify would
// have made of it comes back as sigErr (ReasonSignatureFormat or
// ReasonInvalidSignature). A smart-contract wallet's signature is such a
// one: the token checks it with ERC-1271, and only the chain can tell. A
// caller that accepts a payment with sigErr set must have it verified by a
// facilitator that checks signatures on chain. err is every other refusal,
// a missing signature or one that is not hex included.
func (v Verifier) VerifyExceptSignature(payload x402.PaymentPayload, req x402.PaymentRequirements) (payer string, sigErr, err error) {
	payer, se, err := v.verify(payload, req, true)
	if se != nil {
		return payer, se, err
	}
	return payer, nil, err
}

// verify runs the checks of Verify. With deferSig, a signature refusal
// (other than a missing or non-hex signature) is returned as sigErr after
// every other check has passed; without it, as err, in the order Verify
// documents.
func (v Verifier) verify(payload x402.PaymentPayload, req x402.PaymentRequirements, deferSig bool) (payer string, sigErr *VerifyError, err error) {
	if payload.X402Version != 1 && payload.X402Version != 2 {
		return "", nil, verifyRefuse(x402.ReasonInvalidX402Version, "x402Version %d is not supported (1 or 2)", payload.X402Version)
	}
	acc := payload.Accepted
	if acc.Scheme != x402.SchemeExact || req.Scheme != x402.SchemeExact {
		return "", nil, verifyRefuse(ReasonScheme, "scheme must be %q", x402.SchemeExact)
	}
	n, known := x402.LookupNetwork(req.Network)
	if acc.Network != req.Network {
		// A v1 payment names its network "base" where the requirements may
		// say "eip155:8453": same network.
		if an, ok := x402.LookupNetwork(acc.Network); payload.X402Version != 1 || !ok || !known || an.CAIP2 != n.CAIP2 {
			return "", nil, verifyRefuse(ReasonNetworkMismatch, "accepted network %q differs from the required %q", clip.Bytes(acc.Network, 40), req.Network)
		}
	}
	if !known {
		return "", nil, verifyRefuse(x402.ReasonInvalidNetwork, "network %q is not supported", clip.Bytes(req.Network, 40))
	}
	if payload.X402Version == 2 {
		switch {
		case !wire.EqualAddressFold(acc.Asset, req.Asset):
			return "", nil, verifyRefuse(ReasonAssetMismatch, "accepted asset differs from the required asset %s", req.Asset)
		case !wire.EqualAddressFold(acc.PayTo, req.PayTo):
			return "", nil, verifyRefuse(ReasonRequirementsMismatch, "accepted payTo differs from the required payTo %s", req.PayTo)
		case !sameAmount(acc.Amount, req.Amount):
			return "", nil, verifyRefuse(ReasonRequirementsMismatch, "accepted amount differs from the required amount %s", req.Amount)
		case acc.MaxTimeoutSeconds != req.MaxTimeoutSeconds:
			return "", nil, verifyRefuse(ReasonRequirementsMismatch, "accepted maxTimeoutSeconds %d differs from the required %d", acc.MaxTimeoutSeconds, req.MaxTimeoutSeconds)
		}
	}
	if !wire.EqualAddressFold(req.Asset, n.USDC) {
		return "", nil, verifyRefuse(ReasonAssetMismatch, "asset must be USDC on %s (%s)", n.CAIP2, n.USDC)
	}
	name, version, ok := extraDomain(req.Extra)
	if !ok {
		return "", nil, verifyRefuse(ReasonMissingEIP712Domain, "requirements lack extra.name and extra.version")
	}
	if name != n.EIP712Name {
		return "", nil, verifyRefuse(ReasonTokenNameMismatch, "extra.name must be %q on %s", n.EIP712Name, n.CAIP2)
	}
	if version != n.EIP712Version {
		return "", nil, verifyRefuse(ReasonTokenVersionMismatch, "extra.version must be %q on %s", n.EIP712Version, n.CAIP2)
	}

	p, verr := parseExactEVMPayload(payload.Payload)
	if verr != nil {
		return "", nil, verr
	}
	auth := p.Authorization
	payer = auth.From
	if p.Signature == "" {
		return payer, nil, verifyRefuse(ReasonMissingSignature, "payload.signature is empty")
	}
	var sig [65]byte
	eoaForm := evmaddr.DecodeHex(sig[:], p.Signature)
	if !eoaForm {
		formatErr := verifyRefuse(ReasonSignatureFormat, "payload.signature must be 0x followed by 130 hex digits (a 65-byte EOA signature)")
		if !deferSig {
			return payer, nil, formatErr
		}
		if !isHexBytes(p.Signature) {
			return payer, nil, verifyRefuse(ReasonSignatureFormat, "payload.signature must be 0x followed by a non-zero even number of hex digits")
		}
		sigErr = formatErr
	}
	w, ferr := parseAuthorization(auth)
	if ferr != nil {
		return payer, nil, verifyRefuse(ferr.reason, "authorization.%s %s", ferr.field, ferr.msg)
	}
	if !wire.EqualAddressFold(auth.To, req.PayTo) {
		return payer, nil, verifyRefuse(ReasonRecipientMismatch, "authorization.to must be payTo %s", req.PayTo)
	}
	amount, ok := wire.ParseUint256(req.Amount)
	if !ok {
		return payer, nil, verifyRefuse(ReasonRequirementsMismatch, "required amount %q is not a decimal integer", clip.Bytes(req.Amount, 40))
	}
	if w.value != amount {
		return payer, nil, verifyRefuse(ReasonValueMismatch, "authorization.value must equal the amount %s", req.Amount)
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	minValidity := v.MinValidity
	if minValidity == 0 {
		minValidity = DefaultMinValidity
	}
	t := now()
	deadline := t.Add(minValidity).Unix()
	if deadline < 0 {
		deadline = 0
	}
	if wire.CompareUint256(w.validBefore, wire.Uint256FromUint64(uint64(deadline))) < 0 {
		return payer, nil, verifyRefuse(ReasonValidBefore, "authorization expires too soon: validBefore must be at least now + %s", minValidity)
	}
	nowUnix := t.Unix()
	if nowUnix < 0 {
		nowUnix = 0
	}
	if wire.CompareUint256(w.validAfter, wire.Uint256FromUint64(uint64(nowUnix))) > 0 {
		return payer, nil, verifyRefuse(ReasonValidAfter, "authorization is not valid yet: validAfter is in the future")
	}
	if sigErr != nil {
		return payer, sigErr, nil
	}
	d := EIP712Domain{Name: name, Version: version, ChainID: n.ChainID, VerifyingContract: common.HexToAddress(req.Asset)}
	digest := wire.TypedDataDigest(domainSeparatorCached(d), w.structHash())
	signer, err := v.Signers.recover(digest, sig)
	switch {
	case errors.Is(err, ErrSignatureHighS):
		sigErr = verifyRefuse(ReasonInvalidSignature, "signature has a high s value (not accepted by the token contract)")
	case err != nil:
		sigErr = verifyRefuse(ReasonInvalidSignature, "signature does not recover: %v", err)
	case signer != w.from:
		sigErr = verifyRefuse(ReasonInvalidSignature, "signature was not made by authorization.from for this token and network")
	default:
		return payer, nil, nil
	}
	if deferSig {
		return payer, sigErr, nil
	}
	return payer, nil, sigErr
}

// isHexBytes reports whether s is 0x followed by a non-zero even number of
// hex digits.
func isHexBytes(s string) bool {
	b, err := hexutil.Decode(s)
	return err == nil && len(b) > 0
}

// ParseExactEVMPayload decodes the payload of an exact/EIP-3009 payment.
// It fails (ReasonInvalidPayload) unless raw is a JSON object with an
// "authorization" object; field syntax is checked by the Verifier.
func ParseExactEVMPayload(raw json.RawMessage) (ExactEVMPayload, error) {
	p, verr := parseExactEVMPayload(raw)
	if verr != nil {
		return ExactEVMPayload{}, verr
	}
	return p, nil
}

func parseExactEVMPayload(raw json.RawMessage) (ExactEVMPayload, *VerifyError) {
	var w struct {
		Signature     string         `json:"signature"`
		Authorization *Authorization `json:"authorization"`
	}
	if !wire.IsJSONObject(raw) {
		return ExactEVMPayload{}, verifyRefuse(ReasonInvalidPayload, "payload must be a JSON object")
	}
	if err := wire.Unmarshal(raw, &w); err != nil {
		return ExactEVMPayload{}, verifyRefuse(ReasonInvalidPayload, "payload is not an exact EVM payload: %v", wire.JSONErrorSummary(err))
	}
	if w.Authorization == nil {
		return ExactEVMPayload{}, verifyRefuse(ReasonInvalidPayload, "payload.authorization is required (only EIP-3009 authorizations are accepted)")
	}
	return ExactEVMPayload{Signature: w.Signature, Authorization: *w.Authorization}, nil
}

// sameAmount compares two atomic amounts numerically; malformed amounts are
// never equal.
func sameAmount(a, b string) bool {
	x, ok1 := wire.ParseUint256(a)
	y, ok2 := wire.ParseUint256(b)
	return ok1 && ok2 && x == y
}

// domainSeparatorCached returns d.Separator(), from a cache for the known
// networks' USDC domains.
func domainSeparatorCached(d EIP712Domain) common.Hash {
	for _, k := range knownSeparators() {
		if k.d == d {
			return k.sep
		}
	}
	return d.Separator()
}

type cachedSeparator struct {
	d   EIP712Domain
	sep common.Hash
}

// knownSeparators holds the domain separators of the known networks' USDC
// (immutable once computed).
var knownSeparators = sync.OnceValue(func() []cachedSeparator {
	var out []cachedSeparator
	for _, n := range x402.Networks() {
		d := Domain(n)
		out = append(out, cachedSeparator{d, d.Separator()})
	}
	return out
})

// NonceKey identifies a payment authorization (the payment journal's key): the network
// (CAIP-2 when known), the asset, the payer and the nonce, lower-cased and
// joined with "/". The same authorization always yields the same key,
// whatever the case of its hex digits or the network's spelling.
func NonceKey(network, asset, from, nonce string) string {
	if n, ok := x402.LookupNetwork(network); ok {
		network = n.CAIP2
	}
	return strings.ToLower(network) + "/" + strings.ToLower(asset) + "/" + strings.ToLower(from) + "/" + strings.ToLower(nonce)
}

// SignerCache remembers the signers recovered from the most recent
// (digest, signature) pairs, at most its size; the oldest is forgotten
// first. Recovery is a pure function of the pair, so a remembered answer is
// always the right one. Safe for concurrent use; a nil *SignerCache
// remembers nothing.
type SignerCache struct {
	mu    sync.Mutex
	known map[[97]byte]common.Address
	ring  [][97]byte // insertion order, for eviction
	next  int
}

// NewSignerCache returns a cache of at most size recoveries (size ≥ 1).
func NewSignerCache(size int) *SignerCache {
	size = max(size, 1)
	return &SignerCache{known: make(map[[97]byte]common.Address, size), ring: make([][97]byte, 0, size)}
}

// recover is RecoverSigner through the cache. Failed recoveries are not
// remembered.
func (c *SignerCache) recover(digest common.Hash, sig [65]byte) (common.Address, error) {
	if c == nil {
		return RecoverSigner(digest[:], sig[:])
	}
	var k [97]byte
	copy(k[:32], digest[:])
	copy(k[32:], sig[:])
	c.mu.Lock()
	a, ok := c.known[k]
	c.mu.Unlock()
	if ok {
		return a, nil
	}
	a, err := RecoverSigner(digest[:], sig[:])
	if err != nil {
		return a, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.known[k]; ok {
		return a, nil
	}
	if len(c.ring) < cap(c.ring) {
		c.ring = append(c.ring, k)
	} else {
		delete(c.known, c.ring[c.next])
		c.ring[c.next] = k
		c.next = (c.next + 1) % len(c.ring)
	}
	c.known[k] = a
	return a, nil
}
