package mcp

import (
	"bytes"
	"encoding/json"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// legacyVersions are the protocol versions of the initialize era the SDK
// serves ("" is a request without the header, read as 2025-03-26).
var legacyVersions = map[string]bool{"": true, "2024-11-05": true, "2025-03-26": true, "2025-06-18": true, "2025-11-25": true}

// serveDirect answers a well-formed tools/call of a tool added with
// AddTool itself, as the SDK's stateless Streamable HTTP handler would but
// without its per-request session (whose JSON decoding costs several times
// the rest of a paid call): the SDK's checks pass, the same call runs, and
// the result has the same form (resultType and _meta serverInfo on
// 2026-07-28, the payment_required result for a client of the extension
// binding). It returns false, having written nothing, for anything it
// does not recognise as valid or that the SDK must judge — another
// method or tool, a notification, a batch, an Origin header or a Host the
// SDK's protections decide on, a base64-encoded Mcp-Name, an Mcp-Param-*
// header, a version or _meta mismatch — so that the SDK answers it, errors
// included.
func (s *Seller) serveDirect(w http.ResponseWriter, r *http.Request, body []byte, info sdk.Meta) bool {
	if r.Header.Get("Origin") != "" || !jsonContent(r.Header.Get("Content-Type")) || !loopbackSafe(r) {
		return false
	}
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  struct {
			Name      string                     `json:"name"`
			Arguments json.RawMessage            `json:"arguments"`
			Meta      map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '{' || json.Unmarshal(body, &m) != nil {
		return false
	}
	if m.JSONRPC != "2.0" || m.Method != "tools/call" || !validID(m.ID) {
		return false
	}
	p := m.Params
	pt := s.tools[p.Name]
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
	version := r.Header.Get(HeaderProtocolVersion)
	rawVersion, modern := p.Meta[sdk.MetaKeyProtocolVersion]
	extension := false
	if modern {
		var v string
		if json.Unmarshal(rawVersion, &v) != nil || v != extensionVersion || version != v ||
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

	a := s.call(r.Context(), pt, p.Arguments, p.Meta[MetaPayment], r)
	var result any
	switch {
	case extension && a.required != nil:
		meta := maps.Clone(info)
		if a.settlement != nil {
			meta[MetaPaymentResponse] = a.settlement
		}
		result = extensionResult{ResultType: ResultTypePaymentRequired, PaymentRequired: a.required, Meta: meta}
	default:
		res := wireResult{Meta: a.result.Meta, Content: a.result.Content, StructuredContent: a.result.StructuredContent, IsError: a.result.IsError}
		if modern {
			res.ResultType = "complete"
			res.Meta = maps.Clone(info)
			maps.Copy(res.Meta, a.result.Meta)
		}
		result = res
	}
	out, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{"2.0", m.ID, result})
	if err != nil {
		s.log.ErrorContext(r.Context(), "x402/mcp: encoding a paid tool result failed", "tool", pt.name, "err", err)
		out = []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32603,"message":"internal error: the result could not be encoded"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
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

// jsonContent reports whether a Content-Type is application/json.
func jsonContent(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// loopbackSafe reports whether the SDK's DNS rebinding protection lets r
// through for sure: it did not reach a loopback listener, or it names a
// loopback host.
func loopbackSafe(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || !isLoopback(local.String()) {
		return true
	}
	return isLoopback(r.Host)
}

// isLoopback reports whether an address or host name is a loopback one.
func isLoopback(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// validID reports whether a JSON-RPC request id is a string or a number.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch id[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
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
