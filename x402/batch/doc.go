// Package batch implements the wire and the cryptography of the x402
// "batch-settlement" payment scheme on EVM networks: the payer deposits
// once into an escrow channel and signs an off-chain cumulative voucher
// per request; the receiver verifies each voucher with one signature
// check and later claims the latest voucher of many channels in one
// transaction, then sweeps the claimed funds.
//
//   - requirements: Extra (receiverAuthorizer, withdrawDelay, the token's
//     EIP-712 name and version, minDeposit, and in a corrective 402 the
//     ChannelState and VoucherState), NewRequirements and ParseExtra;
//   - payloads: Payload (deposit, voucher or refund, as a client sends
//     it) decoded and checked by ParsePayload into a Payment;
//     ClaimPayload, SettlePayload and RefundSettlement, what a server asks
//     of a facilitator; NewChannel, NewDepositPayload, NewVoucherPayload
//     and NewRefundPayload, what a paying client signs;
//   - EIP-712 under the "x402 Batch Settlement" domain (Domain): the
//     channel id (hash of a Channel's configuration), the Voucher, Refund
//     and ClaimBatch digests, their signatures and the recovery of a
//     voucher's signer; the deposit's EIP-3009 ReceiveWithAuthorization
//     (DepositNonce, ReceiveAuthorizationDigest, CollectorData);
//   - the escrow's ABI (SettlementABI) and the calldata of the calls a
//     facilitator or claimer makes;
//   - the payment response extras (ResponseExtra) and the refusal reasons
//     (Reason* constants), as the scheme's specification names them.
//
// The canonical contract addresses are SettlementAddress and
// ERC3009CollectorAddress, the same on every chain.
//
// The scheme's part in a resource server (the x402.ServerScheme, with the
// channel store it keeps ChannelRecords in) is package
// x402/batch/server; a paying client's is x402/batch/client.
package batch
