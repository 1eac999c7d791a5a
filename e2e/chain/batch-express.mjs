#!/usr/bin/env node
// The official @x402/express server selling POST /api/paid at PRICE
// (atomic USDC, default 1000) on Base (eip155:8453) with the official
// batch-settlement server scheme of @x402/evm, paid to PAY_TO, verified
// and settled by the official batch-settlement facilitator in the same
// process (relaying with RELAYER_KEY on RPC_URL; the receiver authorizer
// signs with AUTHORIZER_KEY). POST /admin/claim has the official channel
// manager claim every charged voucher and sweep it to PAY_TO, and answers
// its results. Keys come from the environment and are never printed.
// Prints "listening on http://127.0.0.1:PORT".
//
// Usage: RPC_URL=… RELAYER_KEY=0x… AUTHORIZER_KEY=0x… PAY_TO=0x… node batch-express.mjs
import express from "express";
import { paymentMiddleware, x402ResourceServer } from "@x402/express";
import { x402Facilitator } from "@x402/core/facilitator";
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
const relayer = privateKeyToAccount(process.env.RELAYER_KEY);
const authorizer = privateKeyToAccount(process.env.AUTHORIZER_KEY);
const wallet = createWalletClient({ account: relayer, chain: base, transport: http(process.env.RPC_URL), pollingInterval: 20 }).extend(publicActions);
const facilitator = new x402Facilitator().register(network, new FacilitatorScheme(toFacilitatorEvmSigner({ ...wallet, address: relayer.address }), authorizer));
const local = {
  verify: (p, r) => facilitator.verify(p, r),
  settle: (p, r) => facilitator.settle(p, r),
  getSupported: async () => facilitator.getSupported(),
};
const scheme = new ServerScheme(payTo, { receiverAuthorizerSigner: authorizer, withdrawDelay: 900 });
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
    },
    server,
  ),
);
app.post("/api/paid", (req, res) => res.json({ ok: true, echo: req.body ?? null }));
const listener = app.listen(0, "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${listener.address().port}`);
});
