// Package x402 holds the protocol layer of the x402 v2 payment protocol
// (with v1 compatibility): what every scheme, facilitator, server and
// client shares. The exact scheme on EVM networks (USDC paid with an
// EIP-3009 transferWithAuthorization signed under the token's EIP-712
// domain) is package x402/exact.
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
//     FindMatchingRequirements; the v1 conversions;
//   - the payment-identifier extension (DeclarePaymentIdentifier,
//     PaymentIdentifierOf) and the reasons the protocol defines for every
//     scheme (Reason* constants);
//   - payment schemes as registered mechanisms (scheme.go): each scheme
//     has a part per role, registered on its networks — ServerScheme (its
//     offer entry, local checks and payment identity, settlement and the
//     resolution of an interrupted one), FacilitatorScheme and
//     ClientScheme — with Payment, Settlement and the refusals they share;
//   - the contracts its consumers depend on: Facilitator, and
//     StatusChecker with AuthorizationStatus.
//
// The other packages:
//
//   - x402/exact: the exact scheme on EVM: ExactEVMPayload, the EIP-712
//     digest, signing and recovery (AuthorizationDigest, RecoverSigner,
//     SignAuthorization, NewPayload), and Verifier, every check of an
//     exact payment that needs no chain access, with the reference
//     facilitators' reason strings; its parts per role in x402/exact/server
//     and x402/exact/client (its facilitator parts are Local and the
//     on-chain facilitator);
//   - x402/facilitator: Facilitator implementations, HTTP (a remote
//     facilitator's HTTP API) and Local (development: verifies for real,
//     settles nothing on chain), Mux (dispatches by scheme and network),
//     and Handler to serve any Facilitator over HTTP;
//   - x402/client: the paying client (Transport, Signer), paying with the
//     client schemes it is given;
//   - x402/engine: the payment engine (one durable state machine for every
//     paid call, over any transport); x402/nethttp: its net/http binding.
//
// This package imports none of them.
package x402
