package a2a

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/seed1284c1d2/svc/discovery"
	"github.com/seed1284c1d2/svc/tools"
)

// PaymentCard returns a copy of card, the JSON agent card of
// discovery.Service.AgentCard, after checking that it describes an agent
// selling the tools of cat: capabilities.extensions declares ExtensionURI
// and every tool has a skill whose id is its key.
//
// Deprecated: package discovery builds that card itself (its skills and the
// x402 extension come from the tool descriptors); serve
// discovery.Service.AgentCardHandler, or NewCardHandler(card).
func PaymentCard(card []byte, cat *tools.Catalog) ([]byte, error) {
	if cat == nil {
		return nil, errors.New("a2a: PaymentCard needs the catalog")
	}
	var c discovery.AgentCard
	if err := json.Unmarshal(card, &c); err != nil {
		return nil, fmt.Errorf("a2a: the agent card is not a JSON agent card: %w", err)
	}
	if !slices.ContainsFunc(c.Capabilities.Extensions, func(e discovery.AgentExtension) bool { return e.URI == ExtensionURI }) {
		return nil, fmt.Errorf("a2a: the agent card does not declare the extension %s", ExtensionURI)
	}
	for _, t := range cat.All() {
		if !slices.ContainsFunc(c.Skills, func(s discovery.AgentSkill) bool { return s.ID == t.Key }) {
			return nil, fmt.Errorf("a2a: the agent card has no skill %s", t.Key)
		}
	}
	return bytes.Clone(card), nil
}

// cardHandler serves fixed agent card bytes.
type cardHandler struct {
	body []byte
	etag string
}

// NewCardHandler serves an agent card (discovery.Service.AgentCard) as discovery
// serves its own: Content-Type application/json, Cache-Control
// discovery.DocumentCacheControl, a strong ETag with If-None-Match (304),
// CORS open to every origin, no body for HEAD. Mount it at
// /.well-known/agent-card.json and /.well-known/agent.json with GET.
func NewCardHandler(card []byte) http.Handler {
	sum := sha256.Sum256(card)
	return &cardHandler{body: bytes.Clone(card), etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
}

// ServeHTTP serves the card.
func (c *cardHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", discovery.DocumentCacheControl)
	h.Set("ETag", c.etag)
	h.Set("Access-Control-Allow-Origin", "*")
	if etagMatch(r.Header.Get("If-None-Match"), c.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(c.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(c.body)
	}
}

// etagMatch reports whether an If-None-Match value matches etag (weak
// comparison; "*" matches).
func etagMatch(inm, etag string) bool {
	for t := range strings.SplitSeq(inm, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}
