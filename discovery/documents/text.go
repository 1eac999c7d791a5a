package documents

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/seed1284c1d2/svc/x402"
)

// Link is a route worth calling, with what it is for.
type Link struct {
	Method  string `json:"method"`
	URL     string `json:"url"`
	Purpose string `json:"purpose"`
}

// Summary is the first sentence of a description.
func Summary(d string) string {
	if i := strings.Index(d, ". "); i > 0 {
		d = d[:i+1]
	}
	if i := strings.IndexByte(d, '\n'); i > 0 {
		d = d[:i]
	}
	return strings.TrimSpace(d)
}

// PlanInlineBody is the longest body a call plan repeats in its curl lines
// and in the A2A data part of its transports (with the caller's input);
// a longer one is in the plan's body alone. A shell takes no longer
// argument than 128 KiB, and a plan answering a large input should not
// cost several copies of it.
const PlanInlineBody = 16 << 10

// Curl renders a request as a curl command line; payment, when set,
// is the PAYMENT-SIGNATURE value.
func Curl(method, u string, body json.RawMessage, payment string) string {
	var b strings.Builder
	b.WriteString("curl -sS -i")
	if method != http.MethodGet {
		b.WriteString(" -X " + method)
	}
	b.WriteString(" " + shellQuote(u))
	switch {
	case len(body) > PlanInlineBody:
		b.WriteString(" -H 'Content-Type: application/json' --data-binary @body.json")
	case len(body) > 0:
		b.WriteString(" -H 'Content-Type: application/json' --data-binary " + shellQuote(string(body)))
	}
	if payment != "" {
		b.WriteString(" -H " + shellQuote(x402.HeaderPaymentSignature+": "+payment))
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
