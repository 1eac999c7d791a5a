#!/usr/bin/env node
// The official @x402/express server selling one route, POST /api/paid at
// $0.01 in USDC on Base (eip155:8453), paid to PAY_TO, settled through the
// facilitator at FACILITATOR_URL with the bearer token in
// FACILITATOR_TOKEN. Prints "listening on http://127.0.0.1:PORT".
//
// Usage: FACILITATOR_URL=… FACILITATOR_TOKEN=… PAY_TO=0x… node express-server.mjs
import express from "express";
import { paymentMiddleware, x402ResourceServer } from "@x402/express";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { HTTPFacilitatorClient } from "@x402/core/server";

const token = process.env.FACILITATOR_TOKEN ?? "";
const facilitator = new HTTPFacilitatorClient({
  url: process.env.FACILITATOR_URL,
  createAuthHeaders: async () => {
    const h = { Authorization: `Bearer ${token}` };
    return { verify: h, settle: h, supported: h };
  },
});
const server = new x402ResourceServer(facilitator).register("eip155:8453", new ExactEvmScheme());
const app = express();
app.use(express.json());
app.use(
  paymentMiddleware(
    {
      "POST /api/paid": {
        accepts: { scheme: "exact", price: "$0.01", network: "eip155:8453", payTo: process.env.PAY_TO },
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
