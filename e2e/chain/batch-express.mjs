#!/usr/bin/env node
// The official @x402/express server selling POST /api/paid (and GET
// /api/paid, where the official client sends its refunds) at PRICE
// (atomic USDC, default 1000) on Base (eip155:8453) with the official
// batch-settlement server scheme of @x402/evm, paid to PAY_TO. POST
// /admin/claim has the official channel manager claim every charged
// voucher and sweep it to PAY_TO, and answers its results. Keys come from
// the environment and are never printed. Prints "listening on
// http://127.0.0.1:PORT".
//
// The facilitator is either
//   - the official batch-settlement facilitator in this process, relaying
//     with RELAYER_KEY on RPC_URL, or
//   - the one at FACILITATOR_URL (x402 facilitator HTTP API, the bearer
//     token in FACILITATOR_TOKEN), when FACILITATOR_URL is set.
// AUTHORIZER_KEY, when set, is the server's receiver authorizer (it signs
// claims and refunds); unset, the server delegates to the receiver
// authorizer the facilitator announces in /supported.
//
// Usage: RPC_URL=… RELAYER_KEY=0x… AUTHORIZER_KEY=0x… PAY_TO=0x… node batch-express.mjs
//        FACILITATOR_URL=… FACILITATOR_TOKEN=… PAY_TO=0x… [AUTHORIZER_KEY=0x…] node batch-express.mjs
import express from "express";
import { paymentMiddleware, x402ResourceServer } from "@x402/express";
import { x402Facilitator } from "@x402/core/facilitator";
import { HTTPFacilitatorClient } from "@x402/core/server";
import { BatchSettlementEvmScheme as ServerScheme, BatchSettlementChannelManager } from "@x402/evm/batch-settlement/server";
import { BatchSettlementEvmScheme as FacilitatorScheme } from "@x402/evm/batch-settlement/facilitator";
import { toFacilitatorEvmSigner } from "@x402/evm";
import { createWalletClient, http, publicActions } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";

const network = "eip155:8453";
const usdc = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const payTo = process.env.PAY_TO;
const price = process.env.PRICE ?? "1000";
const authorizer = process.env.AUTHORIZER_KEY ? privateKeyToAccount(process.env.AUTHORIZER_KEY) : undefined;
let local;
if (process.env.FACILITATOR_URL) {
  const token = process.env.FACILITATOR_TOKEN ?? "";
  local = new HTTPFacilitatorClient({
    url: process.env.FACILITATOR_URL,
    createAuthHeaders: async () => {
      const h = { Authorization: `Bearer ${token}` };
      return { verify: h, settle: h, supported: h };
    },
  });
} else {
  const relayer = privateKeyToAccount(process.env.RELAYER_KEY);
  const wallet = createWalletClient({ account: relayer, chain: base, transport: http(process.env.RPC_URL), pollingInterval: 20 }).extend(publicActions);
  const facilitator = new x402Facilitator().register(network, new FacilitatorScheme(toFacilitatorEvmSigner({ ...wallet, address: relayer.address }), authorizer));
  local = {
    verify: (p, r) => facilitator.verify(p, r),
    settle: (p, r) => facilitator.settle(p, r),
    getSupported: async () => facilitator.getSupported(),
  };
}
const scheme = new ServerScheme(payTo, { ...(authorizer ? { receiverAuthorizerSigner: authorizer } : {}), withdrawDelay: 900 });
const server = new x402ResourceServer(local).register(network, scheme);
const manager = new BatchSettlementChannelManager({ scheme, facilitator: local, receiver: payTo, token: usdc, network });

const app = express();
app.use(express.json());
app.post("/admin/claim", async (_req, res) => {
  try {
    res.json(await manager.claimAndSettle());
  } catch (err) {
    res.status(500).json({ error: err instanceof Error ? err.message : String(err) });
  }
});
app.use(
  paymentMiddleware(
    {
      "POST /api/paid": {
        accepts: { scheme: "batch-settlement", price: { amount: price, asset: usdc, extra: { name: "USD Coin", version: "2" } }, network, payTo },
        description: "A paid test route",
        mimeType: "application/json",
      },
      "GET /api/paid": {
        accepts: { scheme: "batch-settlement", price: { amount: price, asset: usdc, extra: { name: "USD Coin", version: "2" } }, network, payTo },
        description: "A paid test route",
        mimeType: "application/json",
      },
    },
    server,
  ),
);
app.post("/api/paid", (req, res) => res.json({ ok: true, echo: req.body ?? null }));
app.get("/api/paid", (_req, res) => res.json({ ok: true }));
const listener = app.listen(0, "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${listener.address().port}`);
});
