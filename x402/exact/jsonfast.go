package exact

import "github.com/seed1284c1d2/svc/x402/internal/wire"

var (
	fastExactKeys = []string{"signature", "authorization"}
	fastAuthKeys  = []string{"from", "to", "value", "validAfter", "validBefore", "nonce"}
)

// fastExactEVMPayload decodes raw as parseExactEVMPayload's encoding/json
// call would, or reports !ok; hasAuth says whether authorization was present.
func fastExactEVMPayload(raw []byte) (e ExactEVMPayload, hasAuth, ok bool) {
	p := wire.NewCursor(raw)
	a := &e.Authorization
	ok = p.KnownMembers(fastExactKeys, func(i int) bool {
		if i == 0 {
			s, ok := p.Str()
			e.Signature = s
			return ok
		}
		hasAuth = true
		return p.StringMembers(fastAuthKeys, []*string{&a.From, &a.To, &a.Value, &a.ValidAfter, &a.ValidBefore, &a.Nonce})
	})
	if !ok || !p.End() {
		return ExactEVMPayload{}, false, false
	}
	return e, hasAuth, true
}
