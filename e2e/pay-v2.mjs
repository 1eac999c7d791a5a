#!/usr/bin/env node
// Pays an x402 v2 resource with the official client (@x402/fetch + @x402/evm)
// and prints one JSON line: {mode, status, body, paymentResponse,
// paymentRequired, first?}.
//
// Usage: E2E_PRIVATE_KEY=0x<64 hex> node pay-v2.mjs <mode> <url> [<url2>]
//
// Modes (all but "pay" and "replay-same" are attacks the server must refuse):
//   pay              the official client, untouched.
//   tamper-value     after signing, authorization.value is lowered by one
//                    (the signature no longer matches the message).
//   tamper-deadline  after signing, authorization.validBefore is pushed an
//                    hour later (the signature no longer matches).
//   tamper-accepted  the client lowers accepted.amount (and signs that amount):
//                    the terms it claims are not the server's.
//   wrong-recipient  a valid signature paying another address, with the
//                    server's requirement as "accepted".
//   expired          the client's clock is two hours behind, so validBefore is
//                    already past when the server sees it.
//   wrong-network    the client pays on Base Sepolia (eip155:84532) with that
//                    network's USDC domain.
//   replay           pays <url>, then sends the same PAYMENT-SIGNATURE to
//                    <url2> (another request); prints the second answer.
//   replay-same      pays <url>, then sends the same PAYMENT-SIGNATURE to
//                    <url> again; prints the second answer.
//
// The private key is read from the environment and never printed.

import { wrapFetchWithPayment, x402Client, decodePaymentResponseHeader } from "@x402/fetch";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { privateKeyToAccount } from "viem/accounts";

const OTHER_RECIPIENT = "0x000000000000000000000000000000000000dEaD";
const BASE_SEPOLIA = {
  network: "eip155:84532",
  asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
  extra: { name: "USDC", version: "2" },
};

const [mode, url, url2] = process.argv.slice(2);
const key = process.env.E2E_PRIVATE_KEY;

function fail(message) {
  process.stdout.write(JSON.stringify({ mode: mode ?? "", error: message }) + "\n");
  process.exit(2);
}

if (!mode || !url) fail("usage: E2E_PRIVATE_KEY=0x... node pay-v2.mjs <mode> <url> [<url2>]");
if (!key || !/^0x[0-9a-fA-F]{64}$/.test(key)) fail("E2E_PRIVATE_KEY must be 0x followed by 64 hex digits");

const account = privateKeyToAccount(key);

// signWith maps the server's chosen requirement to the one the client signs;
// presentAccepted chooses what the payload claims as "accepted".
let signWith = (req) => req;
let presentAccepted = (original, signed) => signed;
let afterSign = () => {};

switch (mode) {
  case "pay":
  case "replay":
  case "replay-same":
    break;
  case "tamper-value":
    afterSign = (payload) => {
      const a = payload.payload.authorization;
      a.value = (BigInt(a.value) - 1n).toString();
    };
    break;
  case "tamper-deadline":
    afterSign = (payload) => {
      const a = payload.payload.authorization;
      a.validBefore = (BigInt(a.validBefore) + 3600n).toString();
    };
    break;
  case "tamper-accepted":
    signWith = (req) => ({ ...req, amount: "1" });
    break;
  case "wrong-recipient":
    signWith = (req) => ({ ...req, payTo: OTHER_RECIPIENT });
    presentAccepted = (original) => original;
    break;
  case "expired": {
    const realNow = Date.now;
    Date.now = () => realNow() - 2 * 3600 * 1000;
    break;
  }
  case "wrong-network":
    signWith = (req) => ({ ...req, ...BASE_SEPOLIA });
    break;
  default:
    fail(`unknown mode ${JSON.stringify(mode)}`);
}

let original;
const client = new x402Client((_version, accepts) => {
  original = accepts[0];
  return signWith(structuredClone(original));
});
client.register("eip155:*", new ExactEvmScheme(account));
client.onAfterPaymentCreation(async ({ paymentPayload }) => {
  paymentPayload.accepted = presentAccepted(structuredClone(original), paymentPayload.accepted);
  afterSign(paymentPayload);
});

// Remember the payment header the wrapper sends, for the replay modes.
let sentSignature;
const recordingFetch = async (input, init) => {
  const req = new Request(input, init);
  const sig = req.headers.get("PAYMENT-SIGNATURE");
  if (sig) sentSignature = sig;
  return fetch(req);
};

async function describe(res) {
  const text = await res.text();
  let body = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: keep the text
  }
  const pr = res.headers.get("PAYMENT-RESPONSE") ?? res.headers.get("X-PAYMENT-RESPONSE");
  const preq = res.headers.get("PAYMENT-REQUIRED");
  return {
    status: res.status,
    body,
    paymentResponse: pr ? decodePaymentResponseHeader(pr) : null,
    paymentRequired: preq ? decodePaymentRequiredHeader(preq) : null,
    exposeHeaders: res.headers.get("Access-Control-Expose-Headers"),
  };
}

try {
  const pay = wrapFetchWithPayment(recordingFetch, client);
  const first = await describe(await pay(url, { method: "GET" }));
  let out = { mode, ...first };
  if (mode === "replay" || mode === "replay-same") {
    if (!sentSignature) fail("no PAYMENT-SIGNATURE was sent on the first request");
    const target = mode === "replay" ? url2 : url;
    if (!target) fail("replay needs <url2>");
    const again = await fetch(target, { headers: { "PAYMENT-SIGNATURE": sentSignature } });
    out = { mode, ...(await describe(again)), first };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
} catch (err) {
  fail(err instanceof Error ? err.message : String(err));
}
