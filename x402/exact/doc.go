// Package exact implements the x402 "exact" payment scheme on EVM networks:
// USDC paid with an EIP-3009 transferWithAuthorization signed under the
// token's EIP-712 domain.
//
//   - the payload: ExactEVMPayload and its Authorization, decoded by
//     ParseExactEVMPayload;
//   - EIP-712: Domain, AuthorizationDigest, RecoverSigner,
//     SignAuthorization, NewNonce and NewPayload (what a paying client
//     signs);
//   - Verifier: every check of an exact payment that needs no chain
//     access, refusals typed as *VerifyError with the reference
//     facilitators' reason strings (Reason* constants; the reasons every
//     scheme shares are package x402's), and SignerCache to recover each
//     signature once;
//   - NonceKey: the identity of an authorization (the payment journal's
//     key).
//
// Its parts per role are x402.ServerScheme in x402/exact/server and
// x402.ClientScheme in x402/exact/client; facilitator.Local and the
// on-chain facilitator are its facilitator schemes.
package exact
