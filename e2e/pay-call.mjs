#!/usr/bin/env node
// Pays one call of an svc paid route with the official x402 v2 client
// (@x402/fetch + @x402/evm), any method, with an optional JSON body, and
// prints one JSON line: {method, url, status, body, paymentResponse,
// paymentRequired}. On a client failure it prints {error} and exits 2.
//
// Usage: E2E_PRIVATE_KEY=0x<64 hex> node pay-call.mjs <METHOD> <url> [<json body>]
//
// The private key is read from the environment and never printed.

import { wrapFetchWithPayment, x402Client, decodePaymentResponseHeader } from "@x402/fetch";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { privateKeyToAccount } from "viem/accounts";

const [method, url, body] = process.argv.slice(2);
const key = process.env.E2E_PRIVATE_KEY;

function fail(message) {
  process.stdout.write(JSON.stringify({ method: method ?? "", url: url ?? "", error: message }) + "\n");
  process.exit(2);
}

if (!method || !url) fail("usage: E2E_PRIVATE_KEY=0x... node pay-call.mjs <METHOD> <url> [<json body>]");
if (!key || !/^0x[0-9a-fA-F]{64}$/.test(key)) fail("E2E_PRIVATE_KEY must be 0x followed by 64 hex digits");
if (body !== undefined) {
  try {
    JSON.parse(body);
  } catch {
    fail("the body is not JSON");
  }
}

const client = new x402Client();
client.register("eip155:*", new ExactEvmScheme(privateKeyToAccount(key)));

try {
  const pay = wrapFetchWithPayment(fetch, client);
  const init = { method: method.toUpperCase() };
  if (body !== undefined) {
    init.body = body;
    init.headers = { "Content-Type": "application/json" };
  }
  const res = await pay(url, init);
  const text = await res.text();
  let parsed = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: keep the text
  }
  const pr = res.headers.get("PAYMENT-RESPONSE");
  const preq = res.headers.get("PAYMENT-REQUIRED");
  process.stdout.write(
    JSON.stringify({
      method: init.method,
      url,
      status: res.status,
      body: parsed,
      paymentResponse: pr ? decodePaymentResponseHeader(pr) : null,
      paymentRequired: preq ? decodePaymentRequiredHeader(preq) : null,
    }) + "\n",
  );
} catch (err) {
  fail(err instanceof Error ? err.message : String(err));
}
