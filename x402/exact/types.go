package exact

// ExactEVMPayload is the payload of the exact scheme on EVM networks with an
// EIP-3009 transferWithAuthorization.
type ExactEVMPayload struct {
	Signature     string        `json:"signature"`
	Authorization Authorization `json:"authorization"`
}

// Authorization is the EIP-3009 TransferWithAuthorization message. Value,
// ValidAfter and ValidBefore are decimal strings; Nonce is 0x + 64 hex digits.
type Authorization struct {
	From        string `json:"from"`
	To          string `json:"to"`
	Value       string `json:"value"`
	ValidAfter  string `json:"validAfter"`
	ValidBefore string `json:"validBefore"`
	Nonce       string `json:"nonce"`
}
