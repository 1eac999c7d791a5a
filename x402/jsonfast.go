package x402

import "github.com/seed1284c1d2/svc/x402/internal/wire"

var (
	fastPayloadKeys      = []string{"x402Version", "resource", "accepted", "payload", "extensions", "scheme", "network"}
	fastRequirementsKeys = []string{"scheme", "network", "amount", "asset", "payTo", "maxTimeoutSeconds", "extra"}
	fastResourceKeys     = []string{"url", "description", "mimeType"}
)

// fastWirePaymentPayload decodes raw as encoding/json would decode it into
// a wirePaymentPayload, or reports !ok. Payload aliases raw.
func fastWirePaymentPayload(raw []byte) (w wirePaymentPayload, ok bool) {
	p := wire.NewCursor(raw)
	ok = p.KnownMembers(fastPayloadKeys, func(i int) bool {
		switch i {
		case 0:
			v, ok := p.Integer()
			w.X402Version = &v
			return ok
		case 1:
			var r ResourceInfo
			if !p.StringMembers(fastResourceKeys, []*string{&r.URL, &r.Description, &r.MimeType}) {
				return false
			}
			w.Resource = &r
			return true
		case 2:
			var a PaymentRequirements
			if !fastRequirements(p, &a) {
				return false
			}
			w.Accepted = &a
			return true
		case 3:
			if c := p.Peek(); c == 'n' {
				return false
			}
			v, ok := p.RawValue()
			w.Payload = v
			return ok
		case 4:
			m, ok := p.Map()
			w.Extensions = m
			return ok
		case 5:
			s, ok := p.Str()
			w.Scheme = s
			return ok
		default:
			s, ok := p.Str()
			w.Network = s
			return ok
		}
	})
	if !ok || !p.End() {
		return wirePaymentPayload{}, false
	}
	return w, true
}

// fastRequirements decodes a PaymentRequirements object.
func fastRequirements(p *wire.Cursor, a *PaymentRequirements) bool {
	strs := []*string{&a.Scheme, &a.Network, &a.Amount, &a.Asset, &a.PayTo}
	return p.KnownMembers(fastRequirementsKeys, func(i int) bool {
		switch i {
		case 5:
			v, ok := p.Integer()
			a.MaxTimeoutSeconds = v
			return ok
		case 6:
			m, ok := p.Map()
			a.Extra = m
			return ok
		default:
			s, ok := p.Str()
			*strs[i] = s
			return ok
		}
	})
}
