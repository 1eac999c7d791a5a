#!/usr/bin/env node
// The official @x402/express middleware (2.27.0) guarding the same route as
// svc, for the 402 comparison of bench/run.sh. Its 402 carries the same
// terms: exact, eip155:8453, USDC, $0.005, with the bazaar-free default
// configuration of the reference quickstart. The facilitator is svc's local
// facilitator served by `svcbench facilitator` (URL in FACILITATOR_URL).
//
// Installed by bench/run.sh (npm ci in bench/express, versions pinned in
// package-lock.json).
// Run: FACILITATOR_URL=http://127.0.0.1:PORT node express-402.mjs [port]
import express from "express";
import { paymentMiddleware, x402ResourceServer } from "@x402/express";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { HTTPFacilitatorClient } from "@x402/core/server";

const port = Number(process.argv[2] ?? 0);
const payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";
const facilitator = new HTTPFacilitatorClient({ url: process.env.FACILITATOR_URL });
const server = new x402ResourceServer(facilitator).register("eip155:8453", new ExactEvmScheme());

const app = express();
app.use(express.json());
app.use(
  paymentMiddleware(
    {
      "POST /api/risk-levels": {
        accepts: { scheme: "exact", price: "$0.005", network: "eip155:8453", payTo },
        description: "Risk levels",
        mimeType: "application/json",
      },
    },
    server,
  ),
);
app.post("/api/risk-levels", (req, res) => res.json({ ok: true }));
const listener = app.listen(port, "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${listener.address().port}`);
});
