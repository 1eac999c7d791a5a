#!/usr/bin/env node
// The official TypeScript facilitator (@x402/core's x402Facilitator) with
// @x402/evm's batch-settlement and exact schemes, settling on the chain at
// RPC_URL (Base, chain id 8453) with a viem wallet whose key is in
// RELAYER_KEY (never printed), served over the x402 facilitator HTTP API:
// POST /verify, POST /settle, GET /supported. It holds no receiver
// authorizer key: claims and refunds come signed by the server. Receipts
// are polled every 20 ms (a local chain mines at once). Prints
// "listening on http://127.0.0.1:PORT".
//
// Usage: RPC_URL=http://127.0.0.1:8545 RELAYER_KEY=0x… node batch-facilitator.mjs
import http from "node:http";
import { x402Facilitator } from "@x402/core/facilitator";
import { ExactEvmScheme } from "@x402/evm/exact/facilitator";
import { BatchSettlementEvmScheme } from "@x402/evm/batch-settlement/facilitator";
import { toFacilitatorEvmSigner } from "@x402/evm";
import { createWalletClient, http as viemHttp, publicActions } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";

const account = privateKeyToAccount(process.env.RELAYER_KEY);
const wallet = createWalletClient({ account, chain: base, transport: viemHttp(process.env.RPC_URL), pollingInterval: 20 }).extend(publicActions);
const signer = toFacilitatorEvmSigner({ ...wallet, address: account.address });
const facilitator = new x402Facilitator()
  .register("eip155:8453", new ExactEvmScheme(signer))
  .register("eip155:8453", new BatchSettlementEvmScheme(signer));

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
