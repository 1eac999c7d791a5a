#!/usr/bin/env node
// Pays an x402 resource with the official x402 v1 client (x402-fetch 1.x),
// which reads the 402 BODY ({x402Version: 1, accepts: [...]}) and answers
// with an X-PAYMENT header. Prints one JSON line: {mode, status, body,
// paymentResponse}.
//
// Usage: E2E_PRIVATE_KEY=0x<64 hex> node pay-v1.mjs pay <url> [<METHOD> [<json body>]]
//
// No chain RPC is contacted: the signer is a local account and EIP-3009
// signing is offline. The private key is read from the environment and
// never printed.

import { wrapFetchWithPayment, createSigner, decodeXPaymentResponse } from "x402-fetch";

const [mode, url, method = "GET", requestBody] = process.argv.slice(2);
const key = process.env.E2E_PRIVATE_KEY;

function fail(message) {
  process.stdout.write(JSON.stringify({ mode: mode ?? "", error: message }) + "\n");
  process.exit(2);
}

if (mode !== "pay" || !url) fail("usage: E2E_PRIVATE_KEY=0x... node pay-v1.mjs pay <url> [<METHOD> [<json body>]]");
if (!key || !/^0x[0-9a-fA-F]{64}$/.test(key)) fail("E2E_PRIVATE_KEY must be 0x followed by 64 hex digits");

try {
  const signer = await createSigner("base", key);
  // Spend at most 0.10 USDC (atomic units, 6 decimals) per call.
  const pay = wrapFetchWithPayment(fetch, signer, 100000n);
  const init = { method: method.toUpperCase() };
  if (requestBody !== undefined) {
    init.body = requestBody;
    init.headers = { "Content-Type": "application/json" };
  }
  const res = await pay(url, init);
  const text = await res.text();
  let body = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: keep the text
  }
  const xpr = res.headers.get("X-PAYMENT-RESPONSE");
  process.stdout.write(
    JSON.stringify({
      mode,
      status: res.status,
      body,
      paymentResponse: xpr ? decodeXPaymentResponse(xpr) : null,
      hasV2PaymentResponse: res.headers.has("PAYMENT-RESPONSE"),
    }) + "\n",
  );
} catch (err) {
  fail(err instanceof Error ? err.message : String(err));
}
