// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @dev The EIP-3009 calls the collector makes (USDC's bytes-signature form).
interface IERC3009Token {
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external;
    function transfer(address to, uint256 value) external returns (bool);
}

/// @title ERC3009DepositCollector
/// @notice The deposit collector of the x402 `batch-settlement` escrow for
/// EIP-3009 tokens, written from the scheme's specification for local
/// test chains. Called by the escrow only, it redeems the payer's
/// ReceiveWithAuthorization (to = this collector, value = the deposit,
/// nonce = keccak256(abi.encode(channelId, salt)), which binds the
/// authorization to one channel) and forwards the tokens to the escrow.
///
/// collect's data is abi.encode(uint256 validAfter, uint256 validBefore,
/// uint256 salt, bytes signature).
///
/// It has no constructor and no storage: a test chain installs its runtime
/// code at the canonical address.
contract ERC3009DepositCollector {
    /// @notice The escrow, at its canonical address: the only caller.
    address public constant BATCH_SETTLEMENT = 0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003;

    error NotEscrow(address caller);
    error TransferFailed();

    /// @notice Pulls amount of token from payer with the authorization in
    /// data and sends it to the escrow.
    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata data) external {
        if (msg.sender != BATCH_SETTLEMENT) revert NotEscrow(msg.sender);
        (uint256 validAfter, uint256 validBefore, uint256 salt, bytes memory signature) =
            abi.decode(data, (uint256, uint256, uint256, bytes));
        bytes32 nonce = keccak256(abi.encode(channelId, salt));
        IERC3009Token(token).receiveWithAuthorization(
            payer, address(this), amount, validAfter, validBefore, nonce, signature
        );
        (bool ok, bytes memory ret) = token.call(abi.encodeCall(IERC3009Token.transfer, (msg.sender, amount)));
        if (!ok || (ret.length != 0 && !abi.decode(ret, (bool)))) revert TransferFailed();
    }
}
