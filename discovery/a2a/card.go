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

// extensionDeclaration is an AgentExtension of the card's
// capabilities.extensions.
type extensionDeclaration struct {
	URI         string `json:"uri"`
	Description string `json:"description"`
	Required    bool   `json:"required"`
}

// paidSkill is the agent card skill of one paid tool.
type paidSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples"`
	InputModes  []string `json:"inputModes"`
	OutputModes []string `json:"outputModes"`
}

// cardSentence is added to the card's description.
const cardSentence = ` Every paid tool is also sold here over A2A with the x402 extension (a2a-x402 v0.2): ` +
	`send a data part {"tool": "<key>", "input": {...}}, pay the input-required task, get the answer with the settlement receipt.`

// PaymentCard returns card (the JSON agent card of
// discovery.Service.AgentCard) extended for an agent that sells the tools
// of cat: capabilities.extensions declares ExtensionURI (required false:
// the discovery skills are free and a paid call works without activation);
// each tool gets a skill whose id is its key, saying its price and the data
// part that calls it; the description says so. Members of the card it does
// not know are kept. Applying it to its own result changes nothing.
func PaymentCard(card []byte, cat *tools.Catalog) ([]byte, error) {
	if cat == nil {
		return nil, errors.New("a2a: PaymentCard needs the catalog")
	}
	var c map[string]json.RawMessage
	if err := json.Unmarshal(card, &c); err != nil || c == nil {
		return nil, fmt.Errorf("a2a: the agent card is not a JSON object: %v", err)
	}
	var caps map[string]json.RawMessage
	if raw, ok := c["capabilities"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &caps); err != nil {
			return nil, fmt.Errorf("a2a: the card's capabilities: %w", err)
		}
	}
	if caps == nil {
		caps = map[string]json.RawMessage{}
	}
	var exts []json.RawMessage
	if raw, ok := caps["extensions"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &exts); err != nil {
			return nil, fmt.Errorf("a2a: the card's capabilities.extensions: %w", err)
		}
	}
	declared := slices.ContainsFunc(exts, func(raw json.RawMessage) bool {
		var e struct{ URI string }
		return json.Unmarshal(raw, &e) == nil && e.URI == ExtensionURI
	})
	if !declared {
		b, err := json.Marshal(extensionDeclaration{URI: ExtensionURI, Required: false,
			Description: "Sells every paid tool with x402 v2 payments (exact, USDC) in the standalone flow: " +
				"a message with a data part {\"tool\", \"input\"} gets a task in input-required carrying x402.payment.required; " +
				"the message carrying x402.payment.payload on that task gets the answer as an artifact and x402.payment.receipts."})
		if err != nil {
			return nil, fmt.Errorf("a2a: encoding the extension: %w", err)
		}
		exts = append(exts, b)
	}
	if err := setJSON(caps, "extensions", exts); err != nil {
		return nil, err
	}
	if err := setJSON(c, "capabilities", caps); err != nil {
		return nil, err
	}

	var skills []json.RawMessage
	if raw, ok := c["skills"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &skills); err != nil {
			return nil, fmt.Errorf("a2a: the card's skills: %w", err)
		}
	}
	have := map[string]bool{}
	for _, raw := range skills {
		var s struct{ ID string }
		if json.Unmarshal(raw, &s) == nil {
			have[s.ID] = true
		}
	}
	for _, t := range cat.All() {
		if have[t.Key] {
			continue
		}
		b, err := json.Marshal(skillOf(t))
		if err != nil {
			return nil, fmt.Errorf("a2a: encoding the skill of %s: %w", t.Key, err)
		}
		skills = append(skills, b)
	}
	if err := setJSON(c, "skills", skills); err != nil {
		return nil, err
	}

	var desc string
	if raw, ok := c["description"]; ok {
		_ = json.Unmarshal(raw, &desc)
	}
	if !strings.Contains(desc, cardSentence) {
		if err := setJSON(c, "description", strings.TrimSpace(desc+cardSentence)); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("a2a: encoding the card: %w", err)
	}
	return buf.Bytes(), nil
}

// setJSON encodes v into m[key].
func setJSON(m map[string]json.RawMessage, key string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("a2a: encoding the card's %s: %w", key, err)
	}
	m[key] = bytes.TrimSpace(buf.Bytes())
	return nil
}

// skillOf is the card skill of a paid tool.
func skillOf(t *tools.Tool) paidSkill {
	first := t.Description
	if i := strings.Index(first, ". "); i > 0 {
		first = first[:i+1]
	}
	example := fmt.Sprintf(`{"tool": %q, "input": {}}`, t.Key)
	if len(t.ExampleInput) > 0 {
		var in bytes.Buffer
		if json.Compact(&in, t.ExampleInput) == nil {
			example = fmt.Sprintf(`{"tool": %q, "input": %s}`, t.Key, in.String())
		}
	}
	tags := append(slices.Clone(t.Tags), "paid", "x402")
	return paidSkill{
		ID:   t.Key,
		Name: t.Name,
		Description: fmt.Sprintf("%s Paid: %s USDC per call (x402 v2, exact, on %s) through the x402 extension: "+
			`send a data part {"tool": %q, "input": {...}} (the input as the catalog's input schema says); `+
			"the task asks for the payment (input-required), and the message carrying it gets the output as the artifact %q.",
			first, t.Price, t.Network, t.Key, t.Key),
		Tags:        tags,
		Examples:    []string{example},
		InputModes:  []string{mediaJSON},
		OutputModes: []string{mediaJSON, mediaText},
	}
}

// cardHandler serves fixed agent card bytes.
type cardHandler struct {
	body []byte
	etag string
}

// NewCardHandler serves an agent card (PaymentCard's result) as discovery
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
