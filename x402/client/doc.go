// Package client is the paying side of x402: an http.RoundTripper
// (Transport, built by New) that answers a 402 by choosing acceptable
// requirements, paying one with a registered scheme (exact with a Signer
// by default; batch-settlement with x402/batch/client) and replaying the
// request with the payment. Schemes that keep state (SettlementReader,
// Resyncer) read the payment responses and corrective 402s of their
// payments. PaymentResponse and PaymentRequiredOf read the x402 headers of
// a response.
package client
