// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @title TestWallet
/// @notice A minimal smart-contract wallet for tests: it accepts (ERC-1271)
/// a 65-byte signature (r ‖ s ‖ v) made by its owner, the address in
/// storage slot 0, set with anvil_setStorageAt after anvil_setCode.
contract TestWallet {
    address public owner; // slot 0

    function isValidSignature(bytes32 hash, bytes memory signature) external view returns (bytes4) {
        if (signature.length != 65) {
            return 0xffffffff;
        }
        bytes32 r;
        bytes32 s;
        uint8 v;
        assembly {
            r := mload(add(signature, 0x20))
            s := mload(add(signature, 0x40))
            v := byte(0, mload(add(signature, 0x60)))
        }
        address signer = ecrecover(hash, v, r, s);
        if (signer == address(0) || signer != owner) {
            return 0xffffffff;
        }
        return 0x1626ba7e;
    }
}
