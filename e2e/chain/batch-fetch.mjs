#!/usr/bin/env node
// The official x402 client paying a batch-settlement route: @x402/fetch
// with the official batch-settlement client scheme of @x402/evm, signing
// with E2E_PRIVATE_KEY (never printed) and reading the chain at RPC_URL.
// It pays CALLS calls of POST <base>/api/paid (a deposit, then vouchers),
// then asks the server's POST <base>/admin/claim (the official channel
// manager's claim and sweep), then the official client's cooperative
// refund of the channel's remainder (GET <base>/api/paid), and prints one
// JSON line: {calls: [{status, paymentResponse}], claim, refund}. A client
// failure prints {error} and exits 2.
//
// Usage: RPC_URL=… E2E_PRIVATE_KEY=0x… node batch-fetch.mjs <base-url> <calls>
import { wrapFetchWithPayment, x402Client, decodePaymentResponseHeader } from "@x402/fetch";
import { BatchSettlementEvmScheme } from "@x402/evm/batch-settlement/client";
import { toClientEvmSigner } from "@x402/evm";
import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";

const [baseURL, callsArg] = process.argv.slice(2);
const fail = (message) => {
  process.stdout.write(JSON.stringify({ error: message }) + "\n");
  process.exit(2);
};
const calls = Number(callsArg);
if (!baseURL || !Number.isInteger(calls) || calls < 1) fail("usage: node batch-fetch.mjs <base-url> <calls>");
if (!/^0x[0-9a-fA-F]{64}$/.test(process.env.E2E_PRIVATE_KEY ?? "")) fail("E2E_PRIVATE_KEY must be 0x followed by 64 hex digits");

const publicClient = createPublicClient({ chain: base, transport: http(process.env.RPC_URL), pollingInterval: 20 });
const scheme = new BatchSettlementEvmScheme(toClientEvmSigner(privateKeyToAccount(process.env.E2E_PRIVATE_KEY), publicClient));
const client = new x402Client();
client.register("eip155:*", scheme);
const paidFetch = wrapFetchWithPayment(fetch, client);
const out = { calls: [] };
try {
  for (let i = 0; i < calls; i++) {
    const res = await paidFetch(`${baseURL}/api/paid`, { method: "POST", body: JSON.stringify({ i }), headers: { "Content-Type": "application/json" } });
    await res.text();
    const pr = res.headers.get("PAYMENT-RESPONSE");
    out.calls.push({ status: res.status, paymentResponse: pr ? decodePaymentResponseHeader(pr) : null });
    if (res.status !== 200) {
      process.stdout.write(JSON.stringify(out) + "\n");
      process.exit(2);
    }
  }
  const claim = await fetch(`${baseURL}/admin/claim`, { method: "POST" });
  out.claim = { status: claim.status, body: await claim.json() };
  out.refund = await scheme.refund(`${baseURL}/api/paid`);
  process.stdout.write(JSON.stringify(out) + "\n");
} catch (err) {
  fail(err instanceof Error ? err.message : String(err));
}
