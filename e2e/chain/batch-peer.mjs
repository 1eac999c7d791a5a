#!/usr/bin/env node
// The official batch-settlement peers of @x402/evm as a line-oriented
// process for the Go tests: the client (BatchSettlementEvmScheme of
// ./batch-settlement/client, signing with E2E_PRIVATE_KEY, reading the
// chain at RPC_URL) and the facilitator (./batch-settlement/facilitator,
// relaying with RELAYER_KEY). Keys are read from the environment and never
// printed.
//
// Each stdin line is one JSON request; each answer is one stdout line,
// {"ok": ...} or {"error": "..."}:
//   {"op":"pay","requirements":R}            → the PaymentPayload the client builds for R
//   {"op":"response","requirements":R,"paymentPayload":P,"settleResponse":S}
//                                             → the client's channel record after reading S
//   {"op":"corrective","paymentRequired":PR} → {recovered, channel} after a corrective 402
//   {"op":"channelId","config":C,"network":N} → computeChannelId(C, N)
//   {"op":"verify"|"settle","paymentPayload":P,"requirements":R}
//                                             → the facilitator's verify / settle answer
//
// Usage: RPC_URL=… E2E_PRIVATE_KEY=0x… RELAYER_KEY=0x… node batch-peer.mjs
import { createInterface } from "node:readline";
import { BatchSettlementEvmScheme as ClientScheme, computeChannelId } from "@x402/evm/batch-settlement/client";
import { BatchSettlementEvmScheme as FacilitatorScheme } from "@x402/evm/batch-settlement/facilitator";
import { toClientEvmSigner, toFacilitatorEvmSigner } from "@x402/evm";
import { createPublicClient, createWalletClient, http, publicActions } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";

const transport = http(process.env.RPC_URL);
const publicClient = createPublicClient({ chain: base, transport, pollingInterval: 20 });
const payer = privateKeyToAccount(process.env.E2E_PRIVATE_KEY);
const client = new ClientScheme(toClientEvmSigner(payer, publicClient));
const relayer = privateKeyToAccount(process.env.RELAYER_KEY);
const wallet = createWalletClient({ account: relayer, chain: base, transport, pollingInterval: 20 }).extend(publicActions);
const facilitator = new FacilitatorScheme(toFacilitatorEvmSigner({ ...wallet, address: relayer.address }));

const channelOf = async (requirements) => {
  const id = computeChannelId(client.buildChannelConfig(requirements), requirements.network);
  return { channelId: id, record: (await client.storage.get(id.toLowerCase())) ?? null };
};

const ops = {
  async pay({ requirements }) {
    const r = await client.createPaymentPayload(2, requirements);
    return { x402Version: 2, accepted: requirements, payload: r.payload };
  },
  async response({ requirements, paymentPayload, settleResponse }) {
    await client.schemeHooks.onPaymentResponse({ settleResponse, paymentPayload, requirements });
    return channelOf(requirements);
  },
  async corrective({ paymentRequired }) {
    const recovered = await client.processCorrectivePaymentRequired(paymentRequired);
    return { recovered, ...(await channelOf(paymentRequired.accepts[0])) };
  },
  async channelId({ config, network }) {
    return computeChannelId(config, network);
  },
  async verify({ paymentPayload, requirements }) {
    return facilitator.verify(paymentPayload, requirements);
  },
  async settle({ paymentPayload, requirements }) {
    return facilitator.settle(paymentPayload, requirements);
  },
};

const write = (v) => process.stdout.write(JSON.stringify(v, (_, x) => (typeof x === "bigint" ? x.toString() : x)) + "\n");
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  try {
    const req = JSON.parse(line);
    const op = ops[req.op];
    if (!op) throw new Error(`unknown op ${req.op}`);
    write({ ok: await op(req) });
  } catch (err) {
    write({ error: err instanceof Error ? err.message : String(err) });
  }
}
