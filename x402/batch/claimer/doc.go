// Package claimer claims what a batch-settlement server charged: it
// gathers the latest voucher of the channels whose charges exceed what
// the escrow has claimed, asks a facilitator to claim many of them in one
// claimWithSignature (the ClaimBatch signed here with the receiver
// authorizer's key), then to sweep the claimed funds to the receiver
// (settle), and refunds idle channels for the operator.
//
// Policy decides when a channel is claimed: its network's unclaimed total
// reaching a threshold, the channel being idle for a while, or a pending
// withdrawal. Withdrawals are watched on every pass: the escrow's view of
// every channel with unclaimed charges is read in one Multicall3 call per
// few hundred channels, mirrored into the channel store, and a channel
// whose payer initiated a withdrawal is claimed at once, well before its
// withdrawal delay ends (passes run every Policy.WithdrawInterval while a
// withdrawal is pending).
//
// Durability: a claim is written to the claim log (Log) as pending, with
// its rows and its authorizer signature, before the facilitator sees it.
// Whatever happens next (the process killed after signing, after the
// transaction was broadcast, after it was mined), the next pass resolves
// every pending claim from the chain before it builds a new one: a claim
// whose rows the escrow already covers (totalClaimed at least the row's)
// is recorded as done; any other is sent again with the same rows and
// signature. The escrow's claims are cumulative (a row at or below the
// channel's totalClaimed changes nothing), so sending a claim again never
// claims a voucher twice, and vouchers live in the channel store, which
// the claimer never deletes from: none is lost.
//
// Instances sharing one claim log (several servers on one PostgreSQL
// database) take turns through the log's lease: the holder runs the
// passes, renewing it each time; the others stand by and take over once
// it ends. ClaimNow and Refund, the operator's, run whoever holds it.
//
// The receiver authorizer's key signs claims and refunds; it is never
// logged. Metrics (Config.Registerer) report the unclaimed amount, the
// channels with unclaimed charges, the oldest unclaimed charge's age,
// claims by outcome, the amount claimed and the gas of claims, sweeps and
// refunds.
package claimer
