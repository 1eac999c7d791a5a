// Package client is the paying side of x402: an http.RoundTripper
// (Transport, built by New) that answers a 402 by choosing acceptable
// requirements, signing an exact payment with a Signer and replaying the
// request once with the payment; PaymentResponse and PaymentRequiredOf
// read the x402 headers of a response.
package client
