package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"regexp"
	"strings"

	"github.com/seed1284c1d2/svc/discovery"
	"github.com/seed1284c1d2/svc/internal/clip"
)

// What a message asks for.
const (
	actionRoute   = "route"
	actionCatalog = "catalog"
	actionFind    = "find"
	actionTool    = "tool"
)

// dataRequest is the data part a caller may send instead of (or with) text.
type dataRequest struct {
	// Action is route (default), catalog, find or tool.
	Action string `json:"action"`
	// Query describes the need (route, find); text parts are used when absent.
	Query *string `json:"query"`
	// Input is the tool input to check before paying (route).
	Input json.RawMessage `json:"input"`
	// Q and Category filter the catalog.
	Q        string `json:"q"`
	Category string `json:"category"`
	// Offset and Limit page the catalog; Limit also bounds find.
	Offset int `json:"offset"`
	Limit  int `json:"limit"`
	// Key names a tool (tool): key, operation id or path.
	Key string `json:"key"`
	// Tool names a paid tool to call (key or operation id), with Input: the
	// task asks for payment, then answers with the tool's output.
	Tool *string `json:"tool"`
}

// dataFields lists the members a data part may hold, for error messages.
const dataFields = "action, query, input, q, category, offset, limit, key (discovery), or tool and input (a paid call)"

// catalogIntent matches a text that asks for the whole catalog.
var catalogIntent = regexp.MustCompile(`^(?:(?:please|pls)\s+)?(?:(?:can|could)\s+you\s+)?` +
	`(?:(?:list|show|get|give|send|display|browse|see|view)\s+(?:me\s+|us\s+)?)?` +
	`(?:(?:all|the|your|every|available|paid|of)\s+)*` +
	`(?:tools?|catalog(?:ue)?|tool\s+catalog(?:ue)?|tool\s+list|list\s+of\s+tools)` +
	`(?:\s+(?:list|catalog(?:ue)?|available|you\s+(?:have|offer|sell)))?(?:\s+please)?$|` +
	`^(?:what|which)\s+tools\s+(?:do\s+you\s+(?:have|offer|sell)|are\s+(?:there|available))$`)

// catalogSubset matches a text that asks for the tools of one kind
// ("show the gold tools"); the group is the kind.
var catalogSubset = regexp.MustCompile(`^(?:(?:please|pls)\s+)?(?:(?:can|could)\s+you\s+)?` +
	`(?:list|show|get|give|send|display|browse|see|view)\s+(?:me\s+|us\s+)?` +
	`(?:(?:all|the|your|every|available|paid|of)\s+)*([a-z0-9][a-z0-9-]{0,30})\s+tools?(?:\s+please)?$`)

// catalogRequest reports whether text asks for the catalog and, for a
// subset ("show the gold tools"), which kind of tools.
func catalogRequest(text string) (subset string, ok bool) {
	t := strings.ToLower(strings.Join(strings.Fields(strings.Trim(text, " \t\r\n.!?")), " "))
	if t == "" || len(t) > 80 {
		return "", false
	}
	if catalogIntent.MatchString(t) {
		return "", true
	}
	if m := catalogSubset.FindStringSubmatch(t); m != nil {
		return m[1], true
	}
	return "", false
}

// ask is what a message asks for: its text parts joined, and its data
// part (at most one; a text part holding a JSON object counts as one).
type ask struct {
	text string
	data *dataRequest
	// dataField names the data part in errors ("message.parts[0].data").
	dataField string
}

// parseRequest reads the text parts and the data part of msg.
func parseRequest(msg message) (ask, *rpcError) {
	var texts []string
	var data *dataRequest
	dataField := ""
	for i, p := range msg.parts {
		field := fmt.Sprintf("message.parts[%d].data", i)
		if !p.isData() {
			s := strings.TrimSpace(p.text)
			if !strings.HasPrefix(s, "{") || !json.Valid([]byte(s)) {
				if s != "" {
					texts = append(texts, s)
				}
				continue
			}
			// A text part holding a JSON object is read as a data part, for
			// clients that can only send text.
			p.data, field = json.RawMessage(s), fmt.Sprintf("message.parts[%d].text", i)
		}
		if data != nil {
			return ask{}, invalidParam(field, "max", "at most one data part per message")
		}
		var d dataRequest
		dec := json.NewDecoder(bytes.NewReader(p.data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d); err != nil {
			if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
				return ask{}, invalidParam(field+"."+strings.Trim(name, `"`), "unknown_field", "unknown member %s; a data part may hold %s", clip.Runes(name, 40), dataFields)
			}
			return ask{}, decodeInto(p.data, &d, field)
		}
		data, dataField = &d, field
	}
	return ask{text: strings.Join(texts, "\n"), data: data, dataField: dataField}, nil
}

// isSale reports whether the request is a paid call (a data part naming a
// tool).
func (r ask) isSale() bool { return r.data != nil && r.data.Tool != nil }

// answer computes the artifacts replying to a discovery request.
func (h *handler) answer(ctx context.Context, req ask) ([]artifact, *rpcError) {
	text, data, dataField := req.text, req.data, req.dataField
	action := actionRoute
	subset := ""
	if data != nil && data.Action != "" {
		action = data.Action
	} else if data == nil {
		var ok bool
		if subset, ok = catalogRequest(text); ok {
			action = actionCatalog
		}
	}
	if data == nil {
		data = &dataRequest{}
	}
	query := text
	if data.Query != nil {
		query = strings.TrimSpace(*data.Query)
	}
	switch action {
	case actionRoute:
		if query == "" && data.Query != nil {
			return nil, invalidParam(dataField+".query", "required", "query must describe the need")
		}
		if query == "" {
			return nil, invalidParam("message.parts", "required",
				`describe the need in a text part ("Find a tool to profile CSV data") or send a data part {"query": "...", "input": {...}}`)
		}
		input := data.Input
		if isNull(input) {
			input = nil
		}
		plan, err := h.s.Route(ctx, query, input)
		if err != nil {
			return nil, fromSurfaceError(err, "")
		}
		return h.planArtifacts(plan)
	case actionCatalog:
		page, err := h.s.Catalog(ctx, data.Q, data.Category, data.Offset, data.Limit)
		if subset != "" {
			// "show the gold tools": the tools tagged gold, else those the
			// finder relates to the word.
			if page, err = h.s.Catalog(ctx, "", subset, 0, 0); err == nil && page.Total == 0 {
				page, err = h.s.Catalog(ctx, subset, "", 0, 0)
			}
		}
		if err != nil {
			return nil, fromSurfaceError(err, dataField)
		}
		return h.artifacts("catalog", "A page of the catalog of paid tools", page, catalogSummary(page))
	case actionFind:
		if query == "" {
			return nil, invalidParam(dataField+".query", "required", "query is required to find tools")
		}
		res, err := h.s.Find(ctx, query, data.Limit)
		if err != nil {
			return nil, fromSurfaceError(err, dataField).rename(dataField+".q", dataField+".query")
		}
		return h.artifacts("matches", "The paid tools ranked for the query, best first", res, findSummary(res))
	case actionTool:
		if data.Key == "" {
			return nil, invalidParam(dataField+".key", "required", "key (a tool key, operation id or path) is required")
		}
		item, err := h.s.ToolInfo(ctx, data.Key)
		if err != nil {
			return nil, fromSurfaceError(err, dataField).rename(dataField+".pathOrKey", dataField+".key")
		}
		return h.artifacts("tool", "The catalog entry of one paid tool", item,
			fmt.Sprintf("%s (%s): %s %s, %s USD per call on %s.", item.Name, item.Key, item.Method, item.URL, item.PriceUSD, item.Network))
	}
	return nil, invalidParam(dataField+".action", "oneof", "action must be route, catalog, find or tool, got %q", clip.Runes(action, 40))
}

// artifacts builds the single artifact of an answer: the JSON object v as a
// data part, then a one-line text summary.
func (h *handler) artifacts(name, description string, v any, summary string) ([]artifact, *rpcError) {
	b, err := json.Marshal(v)
	if err != nil || len(b) == 0 || b[0] != '{' {
		e := newError(CodeInternalError, "internal error")
		e.cause = fmt.Errorf("encoding the %s artifact: %v", name, err)
		return nil, e
	}
	return []artifact{{
		id:          h.newID(),
		name:        name,
		description: description,
		parts: []part{
			{data: b, mediaType: mediaJSON},
			{text: summary, mediaType: mediaText},
		},
	}}, nil
}

// planArtifacts is the "call-plan" artifact of a route plan.
func (h *handler) planArtifacts(plan discovery.RoutePlan) ([]artifact, *rpcError) {
	return h.artifacts("call-plan", "How to call the paid tool that best matches the need: request, price, payment steps", plan, planSummary(plan))
}

// planSummary says in one line what to call, what it costs and how to pay.
func planSummary(p discovery.RoutePlan) string {
	if !p.Matched {
		msg := strings.TrimSpace(p.Message)
		if msg == "" {
			msg = "No paid tool matches this need."
		}
		return msg + " Browse the catalog (send \"catalog\") or rephrase the need."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Best tool: %s (%s).", p.Name, p.Tool)
	if p.Price != nil {
		fmt.Fprintf(&b, " Price: %s %s per call", p.Price.USD, orDefault(p.Price.Currency, "USDC"))
		if p.Network != "" {
			fmt.Fprintf(&b, " on %s", p.Network)
		}
		b.WriteString(".")
	}
	fmt.Fprintf(&b, " Call %s %s; it answers HTTP 402 with PAYMENT-REQUIRED: sign the x402", p.Method, p.URL)
	if p.X402Version != 0 {
		fmt.Fprintf(&b, " v%d", p.X402Version)
	}
	b.WriteString(" payment and retry the same request with the PAYMENT-SIGNATURE header.")
	if p.InputSource == "caller" && !p.InputValid {
		b.WriteString(" Your input is invalid, fix it before paying:")
		for i, f := range p.InputErrors {
			if i == 3 {
				fmt.Fprintf(&b, " (%d more)", len(p.InputErrors)-3)
				break
			}
			fmt.Fprintf(&b, " %s: %s;", f.Field, f.Message)
		}
	}
	return strings.TrimSuffix(b.String(), ";")
}

// catalogSummary lists a catalog page in one line.
func catalogSummary(p discovery.CatalogPage) string {
	if len(p.Items) == 0 {
		return fmt.Sprintf("No tool on this page (%d in total, offset %d).", p.Total, p.Offset)
	}
	keys := make([]string, len(p.Items))
	for i, it := range p.Items {
		keys[i] = fmt.Sprintf("%s (%s USD)", it.Key, it.PriceUSD)
	}
	return fmt.Sprintf("%d of %d paid tools from offset %d: %s.", len(p.Items), p.Total, p.Offset, strings.Join(keys, ", "))
}

// findSummary names the best matches in one line.
func findSummary(r discovery.FindResult) string {
	if len(r.Matches) == 0 {
		return "No paid tool matches this query."
	}
	keys := make([]string, len(r.Matches))
	for i, m := range r.Matches {
		keys[i] = m.Key
	}
	best := r.Matches[0]
	return fmt.Sprintf("Best match: %s (%s %s, %s USD). Ranked: %s.", best.Key, best.Method, best.URL, best.PriceUSD, strings.Join(keys, ", "))
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// outputModes are the media types a caller accepts; empty accepts all.
type outputModes []string

// accepts reports whether media type mt is acceptable.
func (m outputModes) accepts(mt string) bool {
	if len(m) == 0 {
		return true
	}
	typ, _, _ := strings.Cut(mt, "/")
	for _, a := range m {
		am, _, err := mime.ParseMediaType(a)
		if err != nil {
			am = strings.ToLower(strings.TrimSpace(a))
		}
		switch am {
		case mt, "*/*", "*", typ + "/*":
			return true
		}
	}
	return false
}

// acceptsAny reports whether any part this agent produces is acceptable.
func (m outputModes) acceptsAny() bool { return m.accepts(mediaJSON) || m.accepts(mediaText) }

// filter keeps the acceptable parts.
func (m outputModes) filter(parts []part) []part {
	if len(m) == 0 {
		return parts
	}
	var out []part
	for _, p := range parts {
		if m.accepts(p.mediaType) {
			out = append(out, p)
		}
	}
	return out
}
