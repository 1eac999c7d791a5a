package client

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/exact"
	exactclient "github.com/seed1284c1d2/svc/x402/exact/client"
	"github.com/seed1284c1d2/svc/x402/internal/clip"
	"github.com/seed1284c1d2/svc/x402/internal/evmaddr"
)

// Signer holds a payer's private key. It signs EIP-3009 authorizations and
// shows only its address: String, GoString and LogValue print the address,
// and no method returns the key.
type Signer struct {
	key     *ecdsa.PrivateKey
	address common.Address
}

// NewSigner wraps a secp256k1 private key.
func NewSigner(key *ecdsa.PrivateKey) (*Signer, error) {
	if key == nil || key.D == nil || key.D.Sign() <= 0 {
		return nil, errors.New("x402: signer: a private key is required")
	}
	return &Signer{key: key, address: crypto.PubkeyToAddress(key.PublicKey)}, nil
}

// ParseSigner reads a private key written as 64 hex digits, with or without
// "0x". The error never contains the key.
func ParseSigner(hexKey string) (*Signer, error) {
	k, err := crypto.HexToECDSA(strings.TrimPrefix(strings.TrimSpace(hexKey), "0x"))
	if err != nil {
		return nil, errors.New("x402: signer: the private key must be 64 hex digits (optionally 0x-prefixed) of a valid secp256k1 key")
	}
	return NewSigner(k)
}

// Address returns the payer's EIP-55 checksummed address.
func (s *Signer) Address() string { return s.address.Hex() }

// String shows the address only.
func (s *Signer) String() string { return "client.Signer(" + s.address.Hex() + ")" }

// GoString shows the address only (for %#v).
func (s *Signer) GoString() string { return s.String() }

// LogValue shows the address only in slog records.
func (s *Signer) LogValue() slog.Value { return slog.StringValue(s.String()) }

// NewPayload signs an exact/EIP-3009 payment of req (see exact.NewPayload;
// validity ≤ 0 means req.MaxTimeoutSeconds).
func (s *Signer) NewPayload(req x402.PaymentRequirements, now time.Time, validity time.Duration) (exact.ExactEVMPayload, error) {
	return exact.NewPayload(s.key, req, now, validity)
}

// DefaultMaxAmount is the Transport's spending cap per payment when none is
// set: one US dollar, as the reference TS client's default.
const DefaultMaxAmount = "$1"

// DefaultMaxReplayBodyBytes bounds the request body a Transport buffers to
// send it again with the payment (8 MiB), when the request has no GetBody.
const DefaultMaxReplayBodyBytes = 8 << 20

// clMaxOfferBodyBytes bounds the 402 body read for a v1 offer.
const clMaxOfferBodyBytes = 1 << 20

// Errors of the paying client. A *NoAcceptableError matches
// ErrNoAcceptableRequirements and the reason of each refused offer.
var (
	ErrNoAcceptableRequirements = errors.New("x402: no acceptable payment requirements")
	ErrSchemeNotSupported       = errors.New("scheme not supported")
	ErrNetworkNotAllowed        = errors.New("network not allowed")
	ErrAssetNotAllowed          = errors.New("asset not allowed")
	ErrAmountOverMax            = errors.New("amount over the maximum per payment")
	ErrInvalidRequirements      = errors.New("invalid requirements")
	// ErrInvalidPaymentRequired: a 402 with a PAYMENT-REQUIRED header that
	// does not decode.
	ErrInvalidPaymentRequired = errors.New("x402: invalid PAYMENT-REQUIRED header")
	// ErrNoPaymentResponse: the answer has no PAYMENT-RESPONSE /
	// X-PAYMENT-RESPONSE header.
	ErrNoPaymentResponse = errors.New("x402: no payment response header")
	// ErrNoSigner: the Transport has no Signer.
	ErrNoSigner = errors.New("x402: transport has no signer")
)

// RejectedRequirement says why one offered requirement was not paid.
type RejectedRequirement struct {
	Index        int
	Requirements x402.PaymentRequirements
	Err          error // one of ErrSchemeNotSupported, ErrNetworkNotAllowed, ErrAssetNotAllowed, ErrAmountOverMax, ErrInvalidRequirements
	Detail       string
}

// NoAcceptableError is returned by Transport.RoundTrip when no offered
// requirement is acceptable; nothing was signed.
type NoAcceptableError struct {
	Rejected []RejectedRequirement
}

// Error implements error.
func (e *NoAcceptableError) Error() string {
	var b strings.Builder
	b.WriteString(ErrNoAcceptableRequirements.Error())
	for _, r := range e.Rejected {
		fmt.Fprintf(&b, "; accepts[%d]: %v", r.Index, r.Err)
		if r.Detail != "" {
			b.WriteString(" (" + r.Detail + ")")
		}
	}
	if len(e.Rejected) == 0 {
		b.WriteString(": the server offered none")
	}
	return b.String()
}

// Unwrap lets errors.Is match ErrNoAcceptableRequirements and each reason.
func (e *NoAcceptableError) Unwrap() []error {
	out := []error{ErrNoAcceptableRequirements}
	for _, r := range e.Rejected {
		out = append(out, r.Err)
	}
	return out
}

// Transport is an http.RoundTripper that pays x402 402s. On a 402 it reads
// the offer (the PAYMENT-REQUIRED header of v2; else a v1 JSON body), picks
// the first acceptable requirement (a scheme it pays on that network,
// allowed network and asset, amount at most MaxAmount), has the scheme
// build the payment (exact: an EIP-3009 authorization signed with Signer)
// and sends the request once more with PAYMENT-SIGNATURE (v2) or
// X-PAYMENT (v1). It pays once per request, and once more only when a
// Resyncer scheme corrects its state from the 402 answering its payment;
// any other answer is returned as is (even a 402), and a request that
// already carries a payment header is sent without paying. Schemes that
// implement SettlementReader are told the payment response of each
// successful answer. Use PaymentResponse on the answer to read
// the settlement.
type Transport struct {
	// Base sends the requests; nil means http.DefaultTransport.
	Base http.RoundTripper
	// Signer pays with the exact scheme when Schemes is empty; one of them
	// is required to pay (ErrNoSigner otherwise).
	Signer *Signer
	// Schemes are the payment schemes paid with, each on its networks;
	// empty means the exact scheme with Signer.
	Schemes []x402.ClientScheme
	// Networks allowed (CAIP-2 ids or v1 names); empty means NetworkBase.
	Networks []string
	// Assets allowed (token addresses, any case); empty means the USDC of
	// each allowed network.
	Assets []string
	// MaxAmount caps one payment: atomic units ("2500") or, with a "$"
	// prefix, US dollars of a 6-decimal stablecoin ("$0.01"). Empty means
	// DefaultMaxAmount.
	MaxAmount string
	// Now is the clock used for the authorization's validity; nil means
	// time.Now.
	Now func() time.Time
	// Validity of the authorization; zero means the requirement's
	// maxTimeoutSeconds.
	Validity time.Duration
	// MaxReplayBodyBytes bounds a buffered request body; zero means
	// DefaultMaxReplayBodyBytes.
	MaxReplayBodyBytes int64
}

// Option configures New's Transport.
type Option func(*Transport)

// WithBase sets the Transport's Base round tripper.
func WithBase(rt http.RoundTripper) Option { return func(t *Transport) { t.Base = rt } }

// WithSchemes sets the payment schemes paid with (Transport.Schemes).
func WithSchemes(schemes ...x402.ClientScheme) Option {
	return func(t *Transport) { t.Schemes = append([]x402.ClientScheme(nil), schemes...) }
}

// WithNetworks sets the allowed networks.
func WithNetworks(ids ...string) Option {
	return func(t *Transport) { t.Networks = append([]string(nil), ids...) }
}

// WithAssets sets the allowed assets.
func WithAssets(addrs ...string) Option {
	return func(t *Transport) { t.Assets = append([]string(nil), addrs...) }
}

// WithMaxAmount sets the cap per payment (atomic units, or "$" + dollars).
func WithMaxAmount(max string) Option { return func(t *Transport) { t.MaxAmount = max } }

// WithClock sets the clock.
func WithClock(now func() time.Time) Option { return func(t *Transport) { t.Now = now } }

// WithValidity sets the authorization's validity.
func WithValidity(d time.Duration) Option { return func(t *Transport) { t.Validity = d } }

// New returns an http.Client whose Transport pays 402s with signer.
func New(signer *Signer, opts ...Option) *http.Client {
	t := &Transport{Signer: signer}
	for _, o := range opts {
		o(t)
	}
	return &http.Client{Transport: t}
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if req.Header.Get(x402.HeaderPaymentSignature) != "" || req.Header.Get(x402.HeaderV1Payment) != "" {
		return base.RoundTrip(req) // already paying: never pay twice
	}
	getBody, err := t.replayableBody(req)
	if err != nil {
		return nil, err
	}
	first := req
	if getBody != nil && req.GetBody == nil {
		first = req.Clone(req.Context())
		first.Body, _ = getBody()
		first.GetBody = getBody
	}
	resp, err := base.RoundTrip(first)
	if err != nil || resp.StatusCode != http.StatusPaymentRequired {
		return resp, err
	}
	offer, err := clReadOffer(resp)
	if err != nil {
		resp.Body.Close()
		return nil, err
	}
	if offer == nil { // not an x402 402: hand it back untouched
		return resp, nil
	}
	paid, err := t.pay(req.Context(), offer)
	if err != nil {
		resp.Body.Close()
		return nil, err
	}
	drain(resp)
	if resp, err = t.send(base, req, getBody, paid); err != nil {
		return nil, err
	}
	rs, ok := paid.scheme.(Resyncer)
	if !ok || resp.StatusCode != http.StatusPaymentRequired || offer.version != x402.Version {
		return resp, nil
	}
	pr, err := PaymentRequiredOf(resp)
	if err != nil {
		return resp, nil
	}
	again, err := rs.Resync(req.Context(), paid.req, pr)
	if err != nil {
		resp.Body.Close()
		return nil, fmt.Errorf("x402: reading the corrective 402: %w", err)
	}
	if !again {
		return resp, nil
	}
	if paid, err = t.payWith(req.Context(), offer, paid.index, paid.scheme); err != nil {
		resp.Body.Close()
		return nil, err
	}
	drain(resp)
	return t.send(base, req, getBody, paid)
}

// drain reads what is left of a body (bounded) and closes it.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, clMaxOfferBodyBytes))
	resp.Body.Close()
}

// send sends req once more with the payment, and tells a SettlementReader
// scheme the payment response of a successful answer.
func (t *Transport) send(base http.RoundTripper, req *http.Request, getBody func() (io.ReadCloser, error), paid payment) (*http.Response, error) {
	retry := req.Clone(req.Context())
	retry.Header.Set(paid.header, paid.value)
	if getBody != nil {
		var err error
		if retry.Body, err = getBody(); err != nil {
			return nil, fmt.Errorf("x402: replaying the request body: %w", err)
		}
		retry.GetBody = getBody
	}
	resp, err := base.RoundTrip(retry)
	if err != nil {
		return nil, err
	}
	if sr, ok := paid.scheme.(SettlementReader); ok && resp.StatusCode < 300 {
		if settle, perr := PaymentResponse(resp); perr == nil {
			if err := sr.PaymentSettled(req.Context(), paid.req, *settle); err != nil {
				resp.Body.Close()
				return nil, fmt.Errorf("x402: reading the payment response: %w", err)
			}
		}
	}
	return resp, nil
}

// SettlementReader is a ClientScheme keeping state across payments (a
// payment channel's charged amount): the Transport tells it the payment
// response of every successful answer to one of its payments.
type SettlementReader interface {
	PaymentSettled(ctx context.Context, paid x402.PaymentRequirements, resp x402.SettleResponse) error
}

// Resyncer is a ClientScheme that learns from a 402 answering one of its
// payments (a corrective 402 carrying the server's state): when Resync
// reports true, the Transport has it pay the request once more.
type Resyncer interface {
	Resync(ctx context.Context, paid x402.PaymentRequirements, pr x402.PaymentRequired) (bool, error)
}

// replayableBody returns a function giving the request body again, or nil
// for a request without body.
func (t *Transport) replayableBody(req *http.Request) (func() (io.ReadCloser, error), error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	if req.GetBody != nil {
		return req.GetBody, nil
	}
	limit := t.MaxReplayBodyBytes
	if limit <= 0 {
		limit = DefaultMaxReplayBodyBytes
	}
	defer req.Body.Close()
	b, err := io.ReadAll(io.LimitReader(req.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("x402: buffering the request body: %w", err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("x402: request body over %d bytes cannot be replayed with a payment (set GetBody)", limit)
	}
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, nil
}

// clOffer is a decoded 402: the v2 PaymentRequired, or the v1 body's
// requirements converted to v2 (v1Accepts keeps the originals).
type clOffer struct {
	version   int
	pr        x402.PaymentRequired
	v1Accepts []x402.PaymentRequirementsV1
}

// clReadOffer decodes a 402. It returns nil, nil for a 402 that is not x402
// (its body is then restored).
func clReadOffer(resp *http.Response) (*clOffer, error) {
	if h := resp.Header.Get(x402.HeaderPaymentRequired); h != "" {
		pr, err := x402.DecodePaymentRequired(h)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidPaymentRequired, err)
		}
		return &clOffer{version: x402.Version, pr: pr}, nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, clMaxOfferBodyBytes))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("x402: reading the 402 body: %w", err)
	}
	var v1 x402.PaymentRequiredV1
	if json.Unmarshal(b, &v1) != nil || v1.X402Version != x402.VersionV1 || len(v1.Accepts) == 0 {
		return nil, nil
	}
	o := &clOffer{version: x402.VersionV1, pr: x402.PaymentRequired{X402Version: x402.VersionV1, Error: v1.Error}}
	for _, a := range v1.Accepts {
		req, res, err := x402.RequirementsFromV1(a)
		if err != nil { // unknown v1 network: keep a placeholder the chooser refuses
			req = x402.PaymentRequirements{Scheme: a.Scheme, Network: a.Network, Amount: a.MaxAmountRequired, Asset: a.Asset, PayTo: a.PayTo}
		}
		if o.pr.Resource.URL == "" {
			o.pr.Resource = res
		}
		o.pr.Accepts = append(o.pr.Accepts, req)
		o.v1Accepts = append(o.v1Accepts, a)
	}
	return o, nil
}

// payment is a payment made for a request: the requirement chosen (its
// index in the offer), the scheme that paid it and the header carrying it.
type payment struct {
	index         int
	req           x402.PaymentRequirements
	scheme        x402.ClientScheme
	header, value string
}

// pay chooses a requirement and pays it.
func (t *Transport) pay(ctx context.Context, o *clOffer) (payment, error) {
	schemes, err := t.paying()
	if err != nil {
		return payment{}, err
	}
	i, err := t.Choose(o.pr.Accepts)
	if err != nil {
		return payment{}, err
	}
	chosen := o.pr.Accepts[i]
	scheme := schemeFor(schemes, chosen)
	if scheme == nil { // Choose accepts only requirements of these schemes
		return payment{}, fmt.Errorf("x402: %w %q", ErrSchemeNotSupported, clip.Bytes(chosen.Scheme, 20))
	}
	return t.payWith(ctx, o, i, scheme)
}

// payWith has scheme pay the offer's requirement i.
func (t *Transport) payWith(ctx context.Context, o *clOffer, i int, scheme x402.ClientScheme) (payment, error) {
	now := time.Now
	if t.Now != nil {
		now = t.Now
	}
	chosen := o.pr.Accepts[i]
	p := payment{index: i, req: chosen, scheme: scheme}
	raw, err := scheme.Payload(ctx, chosen, now(), t.Validity)
	if err != nil {
		return p, err
	}
	if o.version == x402.VersionV1 {
		a := o.v1Accepts[i]
		p.header = x402.HeaderV1Payment
		p.value, err = x402.EncodeHeader(x402.PaymentPayloadV1{X402Version: x402.VersionV1, Scheme: a.Scheme, Network: a.Network, Payload: raw})
		return p, err
	}
	res := o.pr.Resource
	p.header = x402.HeaderPaymentSignature
	p.value, err = x402.EncodeHeader(x402.PaymentPayload{
		X402Version: x402.Version,
		Resource:    &res,
		Accepted:    chosen,
		Payload:     raw,
		Extensions:  o.pr.Extensions,
	})
	return p, err
}

// paying returns the schemes the Transport pays with: Schemes, else the
// exact scheme with Signer.
func (t *Transport) paying() ([]x402.ClientScheme, error) {
	if len(t.Schemes) > 0 {
		return t.Schemes, nil
	}
	if t.Signer == nil {
		return nil, ErrNoSigner
	}
	s, err := exactclient.New(t.Signer.key)
	if err != nil {
		return nil, err
	}
	return []x402.ClientScheme{s}, nil
}

// schemeFor returns the scheme of schemes paying req, nil if none.
func schemeFor(schemes []x402.ClientScheme, req x402.PaymentRequirements) x402.ClientScheme {
	for _, s := range schemes {
		if x402.Serves(s, req.Scheme, req.Network) {
			return s
		}
	}
	return nil
}

// pays reports whether the Transport pays req's scheme on req's network
// (without Schemes: exact).
func (t *Transport) pays(req x402.PaymentRequirements) bool {
	if len(t.Schemes) == 0 {
		return req.Scheme == x402.SchemeExact
	}
	return schemeFor(t.Schemes, req) != nil
}

// Choose returns the index of the first acceptable requirement: a scheme
// the Transport pays on that network, an allowed network and asset,
// extra.name/extra.version present for exact, a valid payTo and a
// positive amount at most MaxAmount. The error is a
// *NoAcceptableError listing why each one was refused, or a configuration
// error of the Transport.
func (t *Transport) Choose(accepts []x402.PaymentRequirements) (int, error) {
	networks := t.Networks
	if len(networks) == 0 {
		networks = []string{x402.NetworkBase}
	}
	var allowedNets []x402.Network
	for _, id := range networks {
		n, ok := x402.LookupNetwork(id)
		if !ok {
			return -1, fmt.Errorf("x402: transport: %w %q", x402.ErrUnknownNetwork, clip.Bytes(id, 40))
		}
		allowedNets = append(allowedNets, n)
	}
	noErr := &NoAcceptableError{}
	for i, req := range accepts {
		reject := func(err error, format string, args ...any) {
			noErr.Rejected = append(noErr.Rejected, RejectedRequirement{Index: i, Requirements: req, Err: err, Detail: fmt.Sprintf(format, args...)})
		}
		if !t.pays(req) {
			reject(ErrSchemeNotSupported, "scheme %q", clip.Bytes(req.Scheme, 20))
			continue
		}
		var net *x402.Network
		for j := range allowedNets {
			if allowedNets[j].CAIP2 == req.Network || allowedNets[j].V1Name == req.Network {
				net = &allowedNets[j]
				break
			}
		}
		if net == nil {
			reject(ErrNetworkNotAllowed, "network %q", clip.Bytes(req.Network, 40))
			continue
		}
		if !t.assetAllowed(*net, req.Asset) {
			reject(ErrAssetNotAllowed, "asset %q on %s", clip.Bytes(req.Asset, 50), net.CAIP2)
			continue
		}
		if name, version := extraDomain(req); req.Scheme == x402.SchemeExact && (name == "" || version == "") {
			reject(ErrInvalidRequirements, "extra.name/extra.version (the token's EIP-712 domain) missing")
			continue
		}
		if _, ok := evmaddr.Parse(req.PayTo); !ok {
			reject(ErrInvalidRequirements, "payTo is not an address")
			continue
		}
		amount, ok := clAtomic(req.Amount)
		if !ok || amount.Sign() == 0 {
			reject(ErrInvalidRequirements, "amount %q is not a positive integer", clip.Bytes(req.Amount, 40))
			continue
		}
		limit, err := t.maxAtomic(*net)
		if err != nil {
			return -1, err
		}
		if amount.Cmp(limit) > 0 {
			reject(ErrAmountOverMax, "amount %s over the maximum %s", req.Amount, t.maxAmountText())
			continue
		}
		return i, nil
	}
	return -1, noErr
}

// extraDomain returns the token's EIP-712 domain name and version of an
// exact requirement's extra.
func extraDomain(req x402.PaymentRequirements) (name, version string) {
	name, _ = req.Extra["name"].(string)
	version, _ = req.Extra["version"].(string)
	return name, version
}

func (t *Transport) assetAllowed(n x402.Network, asset string) bool {
	if len(t.Assets) == 0 {
		return strings.EqualFold(asset, n.USDC)
	}
	for _, a := range t.Assets {
		if strings.EqualFold(a, asset) {
			return true
		}
	}
	return false
}

func (t *Transport) maxAmountText() string {
	if t.MaxAmount == "" {
		return DefaultMaxAmount
	}
	return t.MaxAmount
}

// maxAtomic is the cap per payment in atomic units (dollars converted with
// the network's USDC decimals).
func (t *Transport) maxAtomic(n x402.Network) (*big.Int, error) {
	s := t.maxAmountText()
	if usd, ok := strings.CutPrefix(s, "$"); ok {
		atomic, err := x402.PriceToAtomic(usd, n.USDCDecimals)
		if err != nil {
			return nil, fmt.Errorf("x402: transport: MaxAmount %q: %w", clip.Bytes(s, 40), err)
		}
		s = atomic
	}
	w, ok := clAtomic(s)
	if !ok {
		return nil, fmt.Errorf("x402: transport: MaxAmount %q is neither atomic units nor \"$\" + dollars", clip.Bytes(s, 40))
	}
	return w, nil
}

// clAtomic parses a non-negative decimal integer of at most 78 digits (a
// uint256).
func clAtomic(s string) (*big.Int, bool) {
	if s == "" || len(s) > 78 {
		return nil, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return nil, false
		}
	}
	v, ok := new(big.Int).SetString(s, 10)
	return v, ok
}

// PaymentResponse decodes the settlement of a paid answer: the
// PAYMENT-RESPONSE header (v2), else X-PAYMENT-RESPONSE (v1). A failed
// settlement decodes fine with Success false. ErrNoPaymentResponse when
// neither header is present.
func PaymentResponse(resp *http.Response) (*x402.SettleResponse, error) {
	h := resp.Header.Get(x402.HeaderPaymentResponse)
	if h == "" {
		h = resp.Header.Get(x402.HeaderV1PaymentResponse)
	}
	if h == "" {
		return nil, ErrNoPaymentResponse
	}
	sr, err := x402.DecodeSettleResponse(h)
	if err != nil {
		return nil, err
	}
	return &sr, nil
}

// OfferOf decodes what a 402 asks: the PAYMENT-REQUIRED header of a v2
// server, else a v1 server's JSON body (its requirements converted to v2,
// X402Version left 1). ok is false for a 402 that is not x402; the body
// stays readable either way.
func OfferOf(resp *http.Response) (pr x402.PaymentRequired, ok bool, err error) {
	o, err := clReadOffer(resp)
	if err != nil || o == nil {
		return x402.PaymentRequired{}, false, err
	}
	return o.pr, true, nil
}

// PaymentRequiredOf decodes the PAYMENT-REQUIRED header of a 402 (its Error
// says why a payment was refused). ErrInvalidPaymentRequired wraps a
// missing or undecodable header.
func PaymentRequiredOf(resp *http.Response) (x402.PaymentRequired, error) {
	h := resp.Header.Get(x402.HeaderPaymentRequired)
	if h == "" {
		return x402.PaymentRequired{}, fmt.Errorf("%w: absent", ErrInvalidPaymentRequired)
	}
	pr, err := x402.DecodePaymentRequired(h)
	if err != nil {
		return x402.PaymentRequired{}, fmt.Errorf("%w: %w", ErrInvalidPaymentRequired, err)
	}
	return pr, nil
}
