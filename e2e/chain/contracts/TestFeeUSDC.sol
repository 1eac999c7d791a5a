// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {TestUSDC} from "./TestUSDC.sol";

/// @title TestFeeUSDC
/// @notice TestUSDC with a fee on transfer: every transfer of value moves
/// value - 1 to its recipient and keeps 1 atomic unit for FEE_SINK, with a
/// Transfer event for each. An EIP-3009 transfer succeeds and its
/// AuthorizationUsed is emitted, but the payee's Transfer is not the amount
/// authorised: a facilitator must not report it as the payment. Installed
/// in place of TestUSDC (same storage layout) for that test only.
contract TestFeeUSDC is TestUSDC {
    address public constant FEE_SINK = address(0xFEE);

    function _move(address from, address to, uint256 value) internal override {
        require(value > 1, "TestFeeUSDC: transfer amount must exceed the fee");
        super._move(from, to, value - 1);
        super._move(from, FEE_SINK, 1);
    }
}
