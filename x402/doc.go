// Package x402 implements the resource-server and paying-client sides of
// the x402 v2 payment protocol (with v1 compatibility) for the "exact"
// scheme on EVM networks: USDC paid with an EIP-3009
// transferWithAuthorization signed under the token's EIP-712 domain.
//
// It knows nothing of what is sold. The pieces:
//
//   - wire types (types.go) and the header codec: EncodeHeader,
//     DecodeHeader, DecodePaymentPayload, DecodePaymentRequired,
//     DecodeSettleResponse (standard base64 of JSON, bounded by
//     MaxHeaderBytes, failures typed as *HeaderError);
//   - money and networks: PriceToAtomic/AtomicToPrice (exact decimal
//     conversion), Network and LookupNetwork (CAIP-2 ids and v1 names);
//   - Route: price, network and payTo of a paid resource, validated at
//     construction, building PaymentRequirements and PaymentRequired (with
//     the bazaar discovery extension from BazaarInfo);
//   - EIP-712: AuthorizationDigest, RecoverSigner, SignAuthorization and
//     NewExactPayload (what a paying client signs);
//   - Verifier: every check of an exact payment that needs no chain access,
//     with the reference facilitators' reason strings (Reason* constants);
//   - Facilitator implementations: HTTPFacilitator (a remote facilitator's
//     HTTP API) and LocalFacilitator (development: verifies for real, settles
//     nothing on chain), and FacilitatorHandler to serve any Facilitator
//     over HTTP;
//   - the paying client (Transport, Signer).
//
// The payment engine (one durable state machine for every paid call, over
// any transport) is package x402/engine; its net/http binding is package
// x402/nethttp.
package x402
