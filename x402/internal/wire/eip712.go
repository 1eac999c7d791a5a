package wire

import (
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// TypedDataDigest is the EIP-712 digest keccak256(0x19 ‖ 0x01 ‖
// domainSeparator ‖ structHash).
func TypedDataDigest(sep, structHash common.Hash) common.Hash {
	var buf [66]byte
	buf[0], buf[1] = 0x19, 0x01
	copy(buf[2:], sep[:])
	copy(buf[34:], structHash[:])
	return crypto.Keccak256Hash(buf[:])
}
