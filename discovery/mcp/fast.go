package mcp

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverTitle is the serverInfo title.
const serverTitle = "svc discovery"

// legacyVersions are the protocol versions of the initialize era the SDK
// serves ("" is a request without the header, read as 2025-03-26).
var legacyVersions = map[string]bool{"": true, "2024-11-05": true, "2025-03-26": true, "2025-06-18": true, "2025-11-25": true}

// serveFast answers a well-formed tools/call of a paid tool itself,
// exactly as the SDK would but without its per-request session (whose
// decoding dominates the cost of a paid call): the same checks as the SDK
// pass, the same seller runs, and the result has the same form (resultType
// and _meta serverInfo on 2026-07-28, the payment_required result for a
// client of the extension binding). It returns false, having written
// nothing, for anything it does not recognise as valid — another tool, a
// notification, a header the SDK must judge (a base64-encoded Mcp-Name, an
// Mcp-Param-*, a version or _meta mismatch) — so that the SDK answers it,
// errors included.
func (h *handler) serveFast(w http.ResponseWriter, r *http.Request, m message) bool {
	if m.id == nil || bytes.Equal(m.id, []byte("null")) {
		return false
	}
	var p struct {
		Name      string                     `json:"name"`
		Arguments json.RawMessage            `json:"arguments"`
		Meta      map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(m.params, &p); err != nil {
		return false
	}
	pt := h.sell.byName[p.Name]
	if pt == nil {
		return false
	}
	if jsonOK, sseOK := accepts(r.Header.Values("Accept")); !jsonOK || !sseOK {
		return false
	}
	for k := range r.Header {
		if strings.HasPrefix(k, "Mcp-Param-") {
			return false
		}
	}
	version := r.Header.Get("MCP-Protocol-Version")
	rawVersion, modern := p.Meta[sdk.MetaKeyProtocolVersion]
	extension := false
	if modern {
		var v string
		if json.Unmarshal(rawVersion, &v) != nil || v != "2026-07-28" || version != v ||
			r.Header.Get("Mcp-Method") != "tools/call" || r.Header.Get("Mcp-Name") != p.Name {
			return false
		}
		var caps struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		}
		raw, ok := p.Meta[sdk.MetaKeyClientCapabilities]
		if !ok || !isObject(raw) || json.Unmarshal(raw, &caps) != nil {
			return false
		}
		if info, ok := p.Meta[sdk.MetaKeyClientInfo]; ok && !validImplementation(info) {
			return false
		}
		_, extension = caps.Extensions[ExtensionPayment]
	} else if !legacyVersions[version] {
		return false
	}

	a := h.sell.call(r.Context(), pt, p.Arguments, p.Meta[MetaPayment], r)
	var result any
	switch {
	case extension && a.required != nil:
		meta := maps.Clone(h.info)
		if a.settlement != nil {
			meta[MetaPaymentResponse] = a.settlement
		}
		result = extensionResult{ResultType: ResultTypePaymentRequired, PaymentRequired: a.required, Meta: meta}
	default:
		res := wireResult{Meta: a.result.Meta, Content: a.result.Content, StructuredContent: a.result.StructuredContent, IsError: a.result.IsError}
		if modern {
			res.ResultType = "complete"
			res.Meta = maps.Clone(h.info)
			maps.Copy(res.Meta, a.result.Meta)
		}
		result = res
	}
	body, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{"2.0", m.id, result})
	if err != nil {
		h.log.ErrorContext(r.Context(), "mcp: encoding a paid tool result failed", "tool", pt.name, "err", err)
		writeRPCError(w, http.StatusInternalServerError, m.id, codeInternalError, "internal error: the result could not be encoded")
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return true
}

// wireResult is a CallToolResult as the SDK writes it, with resultType.
type wireResult struct {
	Meta              sdk.Meta      `json:"_meta,omitempty"`
	Content           []sdk.Content `json:"content"`
	StructuredContent any           `json:"structuredContent,omitempty"`
	IsError           bool          `json:"isError,omitempty"`
	ResultType        string        `json:"resultType,omitempty"`
}

// extensionResult is the extension binding's answer to a call that needs
// payment.
type extensionResult struct {
	ResultType      string          `json:"resultType"`
	PaymentRequired json.RawMessage `json:"paymentRequired"`
	Meta            sdk.Meta        `json:"_meta,omitempty"`
}

// accepts reports whether Accept values admit JSON and SSE, as the SDK
// reads them.
func accepts(values []string) (jsonOK, sseOK bool) {
	for _, value := range values {
		for raw := range strings.SplitSeq(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				sseOK = true
			case "*/*":
				jsonOK, sseOK = true, true
			}
		}
	}
	return jsonOK, sseOK
}

// isObject reports whether raw JSON is an object.
func isObject(raw json.RawMessage) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// validImplementation reports whether raw is an {name, version} object of
// strings, as the SDK requires of clientInfo.
func validImplementation(raw json.RawMessage) bool {
	var impl struct {
		Name    *string `json:"name"`
		Version *string `json:"version"`
	}
	return isObject(raw) && json.Unmarshal(raw, &impl) == nil && impl.Name != nil && impl.Version != nil
}
