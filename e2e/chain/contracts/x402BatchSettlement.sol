// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @dev The token calls the escrow makes (an ERC-20 without a return-value
/// quirk, as USDC).
interface IERC20Like {
    function balanceOf(address account) external view returns (uint256);
    function transfer(address to, uint256 value) external returns (bool);
}

/// @dev What the escrow asks of a deposit collector: pull amount of token
/// from payer for channelId, as data authorises, and transfer it to the
/// caller (the escrow).
interface IDepositCollector {
    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata data) external;
}

/// @title x402BatchSettlement
/// @notice The escrow of the x402 `batch-settlement` scheme on EVM, written
/// from the scheme's specification for local test chains: payment channels
/// identified by the EIP-712 hash of their immutable configuration,
/// deposits through a deposit collector, cumulative vouchers signed by the
/// payer's authorizer and claimed in batches (`claim`, or
/// `claimWithSignature` relayed with the receiver authorizer's signature
/// over the whole batch), `settle` sweeping a receiver's claimed funds in one
/// transfer, cooperative refunds (direct or signed, with a per-channel
/// nonce) and the payer's timed withdrawal.
///
/// It has no constructor and no storage to initialise (the EIP-712 domain
/// uses block.chainid and address(this); the deposit collector's address
/// is a constant), so a test chain installs its runtime code with
/// anvil_setCode or a genesis allocation at the canonical address.
contract x402BatchSettlement {
    struct ChannelConfig {
        address payer;
        address payerAuthorizer;
        address receiver;
        address receiverAuthorizer;
        address token;
        uint40 withdrawDelay;
        bytes32 salt;
    }

    struct Voucher {
        ChannelConfig channel;
        uint128 maxClaimableAmount;
    }

    struct VoucherClaim {
        Voucher voucher;
        bytes signature;
        uint128 totalClaimed;
    }

    struct Channel {
        uint128 balance;
        uint128 totalClaimed;
    }

    struct Withdrawal {
        uint128 amount;
        uint40 initiatedAt;
    }

    struct ReceiverTotals {
        uint128 totalClaimed;
        uint128 totalSettled;
    }

    bytes32 public constant CHANNEL_CONFIG_TYPEHASH = keccak256(
        "ChannelConfig(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)"
    );
    bytes32 public constant VOUCHER_TYPEHASH = keccak256("Voucher(bytes32 channelId,uint128 maxClaimableAmount)");
    bytes32 public constant REFUND_TYPEHASH = keccak256("Refund(bytes32 channelId,uint256 nonce,uint128 amount)");
    bytes32 public constant CLAIM_ENTRY_TYPEHASH =
        keccak256("ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)");
    bytes32 public constant CLAIM_BATCH_TYPEHASH = keccak256(
        "ClaimBatch(ClaimEntry[] claims)ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)"
    );

    uint40 public constant MIN_WITHDRAW_DELAY = 15 minutes;
    uint40 public constant MAX_WITHDRAW_DELAY = 30 days;

    /// @notice The EIP-3009 deposit collector, at its canonical address.
    address public constant ERC3009_DEPOSIT_COLLECTOR = 0x4020806089470a89826cB9fB1f4059150b550004;

    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 private constant NAME_HASH = keccak256("x402 Batch Settlement");
    bytes32 private constant VERSION_HASH = keccak256("1");
    bytes4 private constant ERC1271_MAGIC = 0x1626ba7e;
    uint256 private constant HALF_ORDER = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    /// @notice Per channel: deposited minus withdrawn and refunded, and the
    /// cumulative amount claimed by the receiver.
    mapping(bytes32 => Channel) public channels;
    /// @notice Per channel: the payer's pending timed withdrawal.
    mapping(bytes32 => Withdrawal) public pendingWithdrawals;
    /// @notice Per channel: the nonce the next refundWithSignature must carry.
    mapping(bytes32 => uint256) public refundNonce;
    /// @notice Per receiver and token: claimed and swept totals.
    mapping(address => mapping(address => ReceiverTotals)) public receivers;

    bool private transient _entered;

    event ChannelCreated(bytes32 indexed channelId, ChannelConfig config);
    event ChannelClosed(bytes32 indexed channelId, ChannelConfig config);
    event Deposited(bytes32 indexed channelId, address indexed sender, uint128 amount, uint128 balance);
    event Claimed(bytes32 indexed channelId, address indexed sender, uint128 amount, uint128 totalClaimed);
    event Settled(address indexed receiver, address indexed token, address indexed sender, uint128 amount);
    event WithdrawInitiated(bytes32 indexed channelId, uint128 amount, uint40 finalizableAt);
    event Withdrawn(bytes32 indexed channelId, uint128 amount);
    event Refunded(bytes32 indexed channelId, address indexed sender, uint128 amount, uint256 nonce);

    error InvalidChannelConfig();
    error UnknownCollector(address collector);
    error DepositNotReceived(uint256 expected, uint256 received);
    error ZeroAmount();
    error NotReceiverSide(address caller);
    error NotPayerSide(address caller);
    error InvalidVoucherSignature(bytes32 channelId);
    error InvalidAuthorizerSignature();
    error MixedReceiverAuthorizers();
    error ClaimAboveVoucher(bytes32 channelId, uint128 totalClaimed, uint128 maxClaimableAmount);
    error ClaimAboveBalance(bytes32 channelId, uint128 totalClaimed, uint128 balance);
    error EmptyBatch();
    error RefundNonceMismatch(uint256 expected, uint256 got);
    error WithdrawAboveAvailable(uint128 amount, uint128 available);
    error WithdrawPending(bytes32 channelId);
    error NoPendingWithdrawal(bytes32 channelId);
    error WithdrawNotReady(uint256 finalizableAt);
    error TransferFailed();
    error Reentrancy();

    modifier nonReentrant() {
        if (_entered) revert Reentrancy();
        _entered = true;
        _;
        _entered = false;
    }

    // --- identities and digests ---------------------------------------------

    /// @notice The EIP-712 domain separator {name "x402 Batch Settlement",
    /// version "1", chainId, verifyingContract this}.
    function DOMAIN_SEPARATOR() public view returns (bytes32) {
        return keccak256(abi.encode(DOMAIN_TYPEHASH, NAME_HASH, VERSION_HASH, block.chainid, address(this)));
    }

    /// @notice A channel's id: the EIP-712 digest of its configuration.
    function getChannelId(ChannelConfig calldata config) public view returns (bytes32) {
        return _digest(_configHash(config));
    }

    /// @notice The digest a payer authorizer signs for a voucher.
    function getVoucherDigest(bytes32 channelId, uint128 maxClaimableAmount) public view returns (bytes32) {
        return _digest(keccak256(abi.encode(VOUCHER_TYPEHASH, channelId, maxClaimableAmount)));
    }

    /// @notice The digest a receiver authorizer signs for a refund.
    function getRefundDigest(bytes32 channelId, uint256 nonce, uint128 amount) public view returns (bytes32) {
        return _digest(keccak256(abi.encode(REFUND_TYPEHASH, channelId, nonce, amount)));
    }

    /// @notice The digest a receiver authorizer signs for a batch of claims.
    function getClaimBatchDigest(VoucherClaim[] calldata voucherClaims) public view returns (bytes32) {
        bytes32[] memory entries = new bytes32[](voucherClaims.length);
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            VoucherClaim calldata c = voucherClaims[i];
            entries[i] = keccak256(
                abi.encode(
                    CLAIM_ENTRY_TYPEHASH, getChannelId(c.voucher.channel), c.voucher.maxClaimableAmount, c.totalClaimed
                )
            );
        }
        return _digest(keccak256(abi.encode(CLAIM_BATCH_TYPEHASH, keccak256(abi.encodePacked(entries)))));
    }

    // --- deposit --------------------------------------------------------------

    /// @notice Adds amount to the channel of config, pulled from the payer by
    /// collector as collectorData authorises. Anyone may relay it.
    function deposit(ChannelConfig calldata config, uint128 amount, address collector, bytes calldata collectorData)
        external
        nonReentrant
    {
        _checkConfig(config);
        if (amount == 0) revert ZeroAmount();
        if (collector != ERC3009_DEPOSIT_COLLECTOR) revert UnknownCollector(collector);
        bytes32 id = getChannelId(config);
        IERC20Like token = IERC20Like(config.token);
        uint256 before = token.balanceOf(address(this));
        IDepositCollector(collector).collect(config.payer, config.token, amount, id, collectorData);
        uint256 received = token.balanceOf(address(this)) - before;
        if (received != amount) revert DepositNotReceived(amount, received);
        Channel storage ch = channels[id];
        if (ch.balance == ch.totalClaimed) emit ChannelCreated(id, config);
        ch.balance += amount;
        emit Deposited(id, msg.sender, amount, ch.balance);
    }

    // --- claims and sweeps ----------------------------------------------------

    /// @notice Claims vouchers; the caller must be the receiver or the
    /// receiver authorizer of every row's channel.
    function claim(VoucherClaim[] calldata voucherClaims) external nonReentrant {
        if (voucherClaims.length == 0) revert EmptyBatch();
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            ChannelConfig calldata cfg = voucherClaims[i].voucher.channel;
            if (msg.sender != cfg.receiver && msg.sender != cfg.receiverAuthorizer) revert NotReceiverSide(msg.sender);
            _claim(voucherClaims[i]);
        }
    }

    /// @notice Claims vouchers with the receiver authorizer's EIP-712
    /// ClaimBatch signature over every row; anyone may relay it. All rows
    /// must share one receiver authorizer.
    function claimWithSignature(VoucherClaim[] calldata voucherClaims, bytes calldata authorizerSignature)
        external
        nonReentrant
    {
        if (voucherClaims.length == 0) revert EmptyBatch();
        address authorizer = voucherClaims[0].voucher.channel.receiverAuthorizer;
        for (uint256 i = 1; i < voucherClaims.length; i++) {
            if (voucherClaims[i].voucher.channel.receiverAuthorizer != authorizer) revert MixedReceiverAuthorizers();
        }
        if (!_validSignature(authorizer, getClaimBatchDigest(voucherClaims), authorizerSignature)) {
            revert InvalidAuthorizerSignature();
        }
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            _claim(voucherClaims[i]);
        }
    }

    /// @notice Transfers every claimed and not yet swept amount of token to
    /// receiver. Anyone may call it; nothing to sweep is a no-op.
    function settle(address receiver, address token) external nonReentrant {
        ReceiverTotals storage r = receivers[receiver][token];
        uint128 amount = r.totalClaimed - r.totalSettled;
        if (amount == 0) return;
        r.totalSettled = r.totalClaimed;
        _transfer(token, receiver, amount);
        emit Settled(receiver, token, msg.sender, amount);
    }

    // --- cooperative refunds --------------------------------------------------

    /// @notice Returns up to amount of the channel's unclaimed escrow to the
    /// payer; the caller must be the receiver or the receiver authorizer.
    function refund(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        if (msg.sender != config.receiver && msg.sender != config.receiverAuthorizer) revert NotReceiverSide(msg.sender);
        _refund(config, getChannelId(config), amount);
    }

    /// @notice refund, relayed by anyone with the receiver authorizer's
    /// EIP-712 Refund signature for the channel's current refund nonce.
    function refundWithSignature(
        ChannelConfig calldata config,
        uint128 amount,
        uint256 nonce,
        bytes calldata receiverAuthorizerSignature
    ) external nonReentrant {
        bytes32 id = getChannelId(config);
        if (nonce != refundNonce[id]) revert RefundNonceMismatch(refundNonce[id], nonce);
        if (!_validSignature(config.receiverAuthorizer, getRefundDigest(id, nonce, amount), receiverAuthorizerSignature)) {
            revert InvalidAuthorizerSignature();
        }
        _refund(config, id, amount);
    }

    // --- timed withdrawal -----------------------------------------------------

    /// @notice Starts the payer's withdrawal of amount (at most the unclaimed
    /// escrow); it can be finalised withdrawDelay seconds later. The caller
    /// must be the payer or the payer authorizer.
    function initiateWithdraw(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        _requirePayerSide(config);
        if (amount == 0) revert ZeroAmount();
        bytes32 id = getChannelId(config);
        Channel storage ch = channels[id];
        uint128 available = ch.balance - ch.totalClaimed;
        if (amount > available) revert WithdrawAboveAvailable(amount, available);
        Withdrawal storage w = pendingWithdrawals[id];
        if (w.initiatedAt != 0) revert WithdrawPending(id);
        w.amount = amount;
        w.initiatedAt = uint40(block.timestamp);
        emit WithdrawInitiated(id, amount, uint40(block.timestamp) + config.withdrawDelay);
    }

    /// @notice Completes a pending withdrawal once its delay has passed,
    /// paying the payer what remains unclaimed of it.
    function finalizeWithdraw(ChannelConfig calldata config) external nonReentrant {
        _requirePayerSide(config);
        bytes32 id = getChannelId(config);
        Withdrawal memory w = pendingWithdrawals[id];
        if (w.initiatedAt == 0) revert NoPendingWithdrawal(id);
        uint256 ready = uint256(w.initiatedAt) + config.withdrawDelay;
        if (block.timestamp < ready) revert WithdrawNotReady(ready);
        delete pendingWithdrawals[id];
        Channel storage ch = channels[id];
        uint128 available = ch.balance - ch.totalClaimed;
        uint128 amount = w.amount < available ? w.amount : available;
        ch.balance -= amount;
        if (amount > 0) _transfer(config.token, config.payer, amount);
        emit Withdrawn(id, amount);
        if (ch.balance == ch.totalClaimed) emit ChannelClosed(id, config);
    }

    // --- batching -------------------------------------------------------------

    /// @notice Runs several calls of this contract in one transaction (for
    /// example a claim and a refund); any failure reverts them all.
    function multicall(bytes[] calldata data) external returns (bytes[] memory results) {
        results = new bytes[](data.length);
        for (uint256 i = 0; i < data.length; i++) {
            (bool ok, bytes memory ret) = address(this).delegatecall(data[i]);
            if (!ok) {
                assembly {
                    revert(add(ret, 0x20), mload(ret))
                }
            }
            results[i] = ret;
        }
    }

    // --- internals ------------------------------------------------------------

    function _claim(VoucherClaim calldata c) private {
        ChannelConfig calldata cfg = c.voucher.channel;
        bytes32 id = getChannelId(cfg);
        Channel storage ch = channels[id];
        uint128 target = c.totalClaimed;
        if (target <= ch.totalClaimed) return; // already claimed: a stale row changes nothing
        uint128 ceiling = c.voucher.maxClaimableAmount;
        if (target > ceiling) revert ClaimAboveVoucher(id, target, ceiling);
        if (target > ch.balance) revert ClaimAboveBalance(id, target, ch.balance);
        bytes32 digest = getVoucherDigest(id, ceiling);
        bool ok = cfg.payerAuthorizer != address(0)
            ? _recover(digest, c.signature) == cfg.payerAuthorizer
            : _validSignature(cfg.payer, digest, c.signature);
        if (!ok) revert InvalidVoucherSignature(id);
        uint128 delta = target - ch.totalClaimed;
        ch.totalClaimed = target;
        receivers[cfg.receiver][cfg.token].totalClaimed += delta;
        emit Claimed(id, msg.sender, delta, target);
    }

    function _refund(ChannelConfig calldata config, bytes32 id, uint128 amount) private {
        if (amount == 0) revert ZeroAmount();
        uint256 nonce = refundNonce[id]++; // advances even when nothing is left to pay
        Channel storage ch = channels[id];
        uint128 available = ch.balance - ch.totalClaimed;
        uint128 paid = amount < available ? amount : available;
        if (paid == 0) return;
        ch.balance -= paid;
        Withdrawal storage w = pendingWithdrawals[id];
        if (w.initiatedAt != 0) {
            if (paid >= w.amount) delete pendingWithdrawals[id];
            else w.amount -= paid;
        }
        _transfer(config.token, config.payer, paid);
        emit Refunded(id, msg.sender, paid, nonce);
        if (ch.balance == ch.totalClaimed) emit ChannelClosed(id, config);
    }

    function _checkConfig(ChannelConfig calldata c) private pure {
        if (
            c.payer == address(0) || c.receiver == address(0) || c.receiverAuthorizer == address(0)
                || c.token == address(0) || c.withdrawDelay < MIN_WITHDRAW_DELAY || c.withdrawDelay > MAX_WITHDRAW_DELAY
        ) revert InvalidChannelConfig();
    }

    function _requirePayerSide(ChannelConfig calldata c) private view {
        if (msg.sender != c.payer && (c.payerAuthorizer == address(0) || msg.sender != c.payerAuthorizer)) {
            revert NotPayerSide(msg.sender);
        }
    }

    function _configHash(ChannelConfig calldata c) private pure returns (bytes32) {
        return keccak256(
            abi.encode(
                CHANNEL_CONFIG_TYPEHASH,
                c.payer,
                c.payerAuthorizer,
                c.receiver,
                c.receiverAuthorizer,
                c.token,
                c.withdrawDelay,
                c.salt
            )
        );
    }

    function _digest(bytes32 structHash) private view returns (bytes32) {
        return keccak256(abi.encodePacked(hex"1901", DOMAIN_SEPARATOR(), structHash));
    }

    /// @dev An EOA's 65-byte ECDSA signature, or a contract's ERC-1271 approval.
    function _validSignature(address signer, bytes32 digest, bytes calldata signature) private view returns (bool) {
        if (signer.code.length == 0) return _recover(digest, signature) == signer && signer != address(0);
        (bool called, bytes memory ret) = signer.staticcall(abi.encodeWithSelector(ERC1271_MAGIC, digest, signature));
        return called && ret.length >= 32 && abi.decode(ret, (bytes32)) == bytes32(ERC1271_MAGIC);
    }

    /// @dev The signer of a 65-byte r ‖ s ‖ v signature (v 27/28 or 0/1, low
    /// s), or the zero address when it is malformed.
    function _recover(bytes32 digest, bytes calldata signature) private pure returns (address) {
        if (signature.length != 65) return address(0);
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        if (v < 27) v += 27;
        if (uint256(s) > HALF_ORDER || (v != 27 && v != 28)) return address(0);
        return ecrecover(digest, v, r, s);
    }

    function _transfer(address token, address to, uint256 amount) private {
        (bool ok, bytes memory ret) = token.call(abi.encodeCall(IERC20Like.transfer, (to, amount)));
        if (!ok || (ret.length != 0 && !abi.decode(ret, (bool)))) revert TransferFailed();
    }
}
