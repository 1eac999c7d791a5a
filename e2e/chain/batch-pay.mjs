#!/usr/bin/env node
// Pays calls with the official x402 v2 client (@x402/fetch's
// wrapFetchWithPayment) and the official batch-settlement client scheme of
// @x402/evm (one channel kept in memory for the whole run: a deposit, then
// vouchers), signing with E2E_PRIVATE_KEY and reading the chain at
// RPC_URL. Each stdin line is one call, {"method","url","body"}; each
// answer is one stdout line, {status, body, paymentResponse} or {error}.
// A line {"refund": url} asks the client's cooperative refund of the
// channel's remainder from url instead, answered {refund}.
// The private key is read from the environment and never printed.
//
// Usage: RPC_URL=… E2E_PRIVATE_KEY=0x… node batch-pay.mjs < calls.jsonl
import { createInterface } from "node:readline";
import { wrapFetchWithPayment, x402Client, decodePaymentResponseHeader } from "@x402/fetch";
import { BatchSettlementEvmScheme } from "@x402/evm/batch-settlement/client";
import { toClientEvmSigner } from "@x402/evm";
import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";

const publicClient = createPublicClient({ chain: base, transport: http(process.env.RPC_URL), pollingInterval: 20 });
const payer = privateKeyToAccount(process.env.E2E_PRIVATE_KEY);
const client = new x402Client();
const scheme = new BatchSettlementEvmScheme(toClientEvmSigner(payer, publicClient));
client.register("eip155:*", scheme);
const pay = wrapFetchWithPayment(fetch, client);

const write = (v) => process.stdout.write(JSON.stringify(v, (_, x) => (typeof x === "bigint" ? x.toString() : x)) + "\n");
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  try {
    const { method, url, body, refund } = JSON.parse(line);
    if (refund) {
      // The client's cooperative refund of the channel's remainder.
      write({ refund: await scheme.refund(refund) });
      continue;
    }
    const init = { method: method.toUpperCase() };
    if (body !== undefined && body !== null) {
      init.body = typeof body === "string" ? body : JSON.stringify(body);
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
    write({ status: res.status, body: parsed, paymentResponse: pr ? decodePaymentResponseHeader(pr) : null });
  } catch (err) {
    write({ error: err instanceof Error ? err.message : String(err) });
  }
}
