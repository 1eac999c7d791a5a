package httpserver

import (
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	"github.com/seed1284c1d2/svc/x402/facilitator/onchain"
)

// Values of RecoveryHealth.Backing.
const (
	// RecoveryChain: recovery reads the chain (authorizationState and the
	// transfer's events), through the on-chain facilitator or a read-only
	// RPC endpoint next to a facilitator reached over HTTP.
	RecoveryChain = "chain"
	// RecoveryLocal: dev mode; the local facilitator's own records.
	RecoveryLocal = "local"
	// RecoveryStatus: the facilitator's own status query.
	RecoveryStatus = "facilitator-status"
	// RecoveryDeduplication: recovery presents an interrupted settlement
	// again and depends on the facilitator deduplicating it.
	RecoveryDeduplication = "facilitator-deduplication"
)

// RecoveryHealth says what the recovery of a settlement interrupted by a
// crash relies on. It is information, not a check: a server whose recovery
// depends on the facilitator deduplicating is still ready.
type RecoveryHealth struct {
	Backing string `json:"backing"` // one of the Recovery* values
	Note    string `json:"note"`
}

// recoveryHealth describes the engine's recovery of settlements through a
// facilitator: that of its first scheme settling through one (exact).
func (s *Server) recoveryHealth() RecoveryHealth {
	var sc x402.StatusChecker
	for _, scheme := range s.engine.Schemes() {
		if f, ok := scheme.(interface{ StatusChecker() x402.StatusChecker }); ok {
			sc = f.StatusChecker()
			break
		}
	}
	switch sc.(type) {
	case *onchain.StatusReader, *onchain.Facilitator:
		return RecoveryHealth{Backing: RecoveryChain, Note: "an interrupted settlement is resolved from what the chain says of its authorization"}
	case *facilitator.Local:
		return RecoveryHealth{Backing: RecoveryLocal, Note: "dev mode: an interrupted settlement is resolved from the local facilitator's records"}
	case nil:
		return RecoveryHealth{Backing: RecoveryDeduplication, Note: "an interrupted settlement is presented to the facilitator again: recovery depends on it " +
			"deduplicating (returning the original result); one answering \"nonce already used\" leaves the payment unknown for the operator. " +
			"Give the server a read of the chain (svc serve --rpc-url) to resolve it from the chain"}
	}
	return RecoveryHealth{Backing: RecoveryStatus, Note: "an interrupted settlement is resolved from the facilitator's status query"}
}
