#!/usr/bin/env node
// Writes test vectors of the batch-settlement scheme's EIP-712 hashes and
// signatures, computed by @x402/evm and viem (an implementation
// independent of ours), for x402/batch's unit tests:
//
//   node batch-vectors.mjs > ../../x402/batch/testdata/vectors.json
//
// Keys are fixed test keys (no value anywhere).
import { computeChannelId } from "@x402/evm/batch-settlement/client";
import { BATCH_SETTLEMENT_ADDRESS, claimBatchTypes, refundTypes, voucherTypes } from "@x402/evm";
import { hashTypedData, keccak256, encodeAbiParameters } from "viem";
import { privateKeyToAccount } from "viem/accounts";

const payerKey = "0x" + "11".repeat(32);
const authKey = "0x" + "22".repeat(32);
const payer = privateKeyToAccount(payerKey);
const auth = privateKeyToAccount(authKey);
const domain = (chainId) => ({ name: "x402 Batch Settlement", version: "1", chainId, verifyingContract: BATCH_SETTLEMENT_ADDRESS });

const configs = [
  { payer: payer.address, payerAuthorizer: payer.address, receiver: "0x00000000000000000000000000000000000000a1", receiverAuthorizer: auth.address,
    token: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", withdrawDelay: 900, salt: "0x" + "00".repeat(32) },
  { payer: "0x00000000000000000000000000000000000000b2", payerAuthorizer: "0x0000000000000000000000000000000000000000", receiver: "0x00000000000000000000000000000000000000a1",
    receiverAuthorizer: auth.address, token: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", withdrawDelay: 2592000, salt: "0x" + "ab".repeat(32) },
];
const out = { payerKey, authorizerKey: authKey, cases: [] };
for (const chainId of [8453, 84532]) {
  for (const config of configs) {
    const channelId = computeChannelId(config, chainId);
    const maxClaimableAmount = 123456789n;
    const voucherDigest = hashTypedData({ domain: domain(chainId), types: voucherTypes, primaryType: "Voucher", message: { channelId, maxClaimableAmount } });
    const voucherSignature = await payer.signTypedData({ domain: domain(chainId), types: voucherTypes, primaryType: "Voucher", message: { channelId, maxClaimableAmount } });
    const refund = { channelId, nonce: 7n, amount: 5000n };
    const refundDigest = hashTypedData({ domain: domain(chainId), types: refundTypes, primaryType: "Refund", message: refund });
    const refundSignature = await auth.signTypedData({ domain: domain(chainId), types: refundTypes, primaryType: "Refund", message: refund });
    const claims = [
      { channelId, maxClaimableAmount, totalClaimed: 1000n },
      { channelId: "0x" + "cd".repeat(32), maxClaimableAmount: 340282366920938463463374607431768211455n, totalClaimed: 0n },
    ];
    const claimBatchDigest = hashTypedData({ domain: domain(chainId), types: claimBatchTypes, primaryType: "ClaimBatch", message: { claims } });
    const claimBatchSignature = await auth.signTypedData({ domain: domain(chainId), types: claimBatchTypes, primaryType: "ClaimBatch", message: { claims } });
    const salt = "0x" + "5a".repeat(32);
    const depositNonce = keccak256(encodeAbiParameters([{ type: "bytes32" }, { type: "uint256" }], [channelId, BigInt(salt)]));
    out.cases.push({
      chainId, config, channelId, maxClaimableAmount: maxClaimableAmount.toString(), voucherDigest, voucherSignature,
      refundNonce: "7", refundAmount: "5000", refundDigest, refundSignature,
      claims: claims.map((c) => ({ channelId: c.channelId, maxClaimableAmount: c.maxClaimableAmount.toString(), totalClaimed: c.totalClaimed.toString() })),
      claimBatchDigest, claimBatchSignature, depositSalt: salt, depositNonce,
    });
  }
}
process.stdout.write(JSON.stringify(out, null, 2) + "\n");
