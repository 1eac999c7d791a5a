#!/usr/bin/env node
// Pays one call with the official x402 v2 client (@x402/fetch +
// @x402/evm) and prints one JSON line: {status, body, paymentResponse}.
// On a client failure it prints {error} and exits 2.
//
// Usage: E2E_PRIVATE_KEY=0x<64 hex> node pay.mjs <METHOD> <url> [<json body>]
//
// The private key is read from the environment and never printed.
import { wrapFetchWithPayment, x402Client, decodePaymentResponseHeader } from "@x402/fetch";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { privateKeyToAccount } from "viem/accounts";

const [method, url, body] = process.argv.slice(2);
const key = process.env.E2E_PRIVATE_KEY;
const fail = (message) => {
  process.stdout.write(JSON.stringify({ error: message }) + "\n");
  process.exit(2);
};
if (!method || !url) fail("usage: node pay.mjs <METHOD> <url> [<json body>]");
if (!/^0x[0-9a-fA-F]{64}$/.test(key ?? "")) fail("E2E_PRIVATE_KEY must be 0x followed by 64 hex digits");

const client = new x402Client();
client.register("eip155:*", new ExactEvmScheme(privateKeyToAccount(key)));
try {
  const init = { method: method.toUpperCase() };
  if (body !== undefined) {
    init.body = body;
    init.headers = { "Content-Type": "application/json" };
  }
  const res = await wrapFetchWithPayment(fetch, client)(url, init);
  const text = await res.text();
  let parsed = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: keep the text
  }
  const pr = res.headers.get("PAYMENT-RESPONSE");
  process.stdout.write(JSON.stringify({ status: res.status, body: parsed, paymentResponse: pr ? decodePaymentResponseHeader(pr) : null }) + "\n");
} catch (err) {
  fail(err instanceof Error ? err.message : String(err));
}
