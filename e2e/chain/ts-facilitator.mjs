#!/usr/bin/env node
// The official TypeScript facilitator (@x402/core's x402Facilitator with
// @x402/evm's exact scheme) settling on the chain at RPC_URL (Base, chain
// id 8453) with a viem wallet whose key is in RELAYER_KEY (never printed),
// served over the x402 facilitator HTTP API: POST /verify, POST /settle,
// GET /supported. Prints "listening on http://127.0.0.1:PORT".
//
// AUTHORIZER_KEY (optional) adds @x402/evm's batch-settlement scheme, whose
// receiver authorizer signs with that key (never printed) when a server
// leaves a claim's or refund's signatures to the facilitator. BATCH=1 adds
// the scheme without a receiver authorizer of its own: claims and refunds
// then come signed by the server.
//
// TUNED=1 gives the wallet viem's nonce manager (concurrent settlements
// take consecutive nonces) and polls receipts every 20 ms instead of the
// chain's default (for a local chain that mines at once).
//
// Usage: RPC_URL=http://127.0.0.1:8545 RELAYER_KEY=0x… [AUTHORIZER_KEY=0x… | BATCH=1] [TUNED=1] node ts-facilitator.mjs
import http from "node:http";
import { x402Facilitator } from "@x402/core/facilitator";
import { ExactEvmScheme } from "@x402/evm/exact/facilitator";
import { BatchSettlementEvmScheme } from "@x402/evm/batch-settlement/facilitator";
import { toFacilitatorEvmSigner } from "@x402/evm";
import { createWalletClient, http as viemHttp, nonceManager, publicActions } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";

const tuned = process.env.TUNED === "1";
const account = privateKeyToAccount(process.env.RELAYER_KEY, tuned ? { nonceManager } : undefined);
const wallet = createWalletClient({
  account,
  chain: base,
  transport: viemHttp(process.env.RPC_URL),
  ...(tuned ? { pollingInterval: 20 } : {}),
}).extend(publicActions);
const signer = toFacilitatorEvmSigner({ ...wallet, address: account.address });
const facilitator = new x402Facilitator().register("eip155:8453", new ExactEvmScheme(signer));
if (process.env.AUTHORIZER_KEY) {
  facilitator.register("eip155:8453", new BatchSettlementEvmScheme(signer, privateKeyToAccount(process.env.AUTHORIZER_KEY)));
} else if (process.env.BATCH === "1") {
  facilitator.register("eip155:8453", new BatchSettlementEvmScheme(signer));
}

const send = (res, status, v) => {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify(v, (_, x) => (typeof x === "bigint" ? x.toString() : x)));
};
const server = http.createServer(async (req, res) => {
  try {
    if (req.method === "GET" && req.url === "/supported") return send(res, 200, facilitator.getSupported());
    if (req.method !== "POST" || (req.url !== "/verify" && req.url !== "/settle")) return send(res, 404, { error: "not found" });
    let body = "";
    for await (const chunk of req) body += chunk;
    const { paymentPayload, paymentRequirements } = JSON.parse(body);
    const out = req.url === "/verify"
      ? await facilitator.verify(paymentPayload, paymentRequirements)
      : await facilitator.settle(paymentPayload, paymentRequirements);
    return send(res, 200, out);
  } catch (err) {
    return send(res, 500, { error: err instanceof Error ? err.message : String(err) });
  }
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${server.address().port}`));
