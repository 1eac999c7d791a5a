package x402

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// MaxFacilitatorRequestBytes bounds the body of a request to
// FacilitatorHandler.
const MaxFacilitatorRequestBytes = 64 << 10

// FacilitatorHandler serves f over the facilitator HTTP API: POST /verify
// and POST /settle (body {x402Version, paymentPayload, paymentRequirements},
// answer a VerifyResponse / SettleResponse, HTTP 200 even for a refused
// payment) and GET /supported. Bodies in the v1 shapes (x402Version 1:
// payload {scheme, network, payload}, requirements with maxAmountRequired)
// are converted to the v2 types, keeping the v1 network names. Malformed
// requests get 400 and bodies over MaxFacilitatorRequestBytes 413, both
// with {"error": message}; an error of f gets 500. Mount it under a prefix
// with http.StripPrefix.
func FacilitatorHandler(f Facilitator) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /verify", func(w http.ResponseWriter, r *http.Request) {
		payload, req, ok := readFacilitatorRequest(w, r)
		if !ok {
			return
		}
		resp, err := f.Verify(r.Context(), payload, req)
		if err != nil {
			writeFacilitatorJSON(w, http.StatusInternalServerError, map[string]string{"error": "verify failed: " + err.Error()})
			return
		}
		writeFacilitatorJSON(w, http.StatusOK, resp)
	})
	mux.HandleFunc("POST /settle", func(w http.ResponseWriter, r *http.Request) {
		payload, req, ok := readFacilitatorRequest(w, r)
		if !ok {
			return
		}
		resp, err := f.Settle(r.Context(), payload, req)
		if err != nil {
			writeFacilitatorJSON(w, http.StatusInternalServerError, map[string]string{"error": "settle failed: " + err.Error()})
			return
		}
		writeFacilitatorJSON(w, http.StatusOK, resp)
	})
	mux.HandleFunc("GET /supported", func(w http.ResponseWriter, r *http.Request) {
		resp, err := f.Supported(r.Context())
		if err != nil {
			writeFacilitatorJSON(w, http.StatusInternalServerError, map[string]string{"error": "supported failed: " + err.Error()})
			return
		}
		writeFacilitatorJSON(w, http.StatusOK, resp)
	})
	return mux
}

// facilitatorV1Requirements is the v1 shape of paymentRequirements.
type facilitatorV1Requirements struct {
	Scheme            string         `json:"scheme"`
	Network           string         `json:"network"`
	MaxAmountRequired string         `json:"maxAmountRequired"`
	Resource          string         `json:"resource"`
	Description       string         `json:"description"`
	MimeType          string         `json:"mimeType"`
	PayTo             string         `json:"payTo"`
	MaxTimeoutSeconds int            `json:"maxTimeoutSeconds"`
	Asset             string         `json:"asset"`
	Extra             map[string]any `json:"extra"`
}

// facilitatorV1Payload is the v1 shape of paymentPayload.
type facilitatorV1Payload struct {
	X402Version int             `json:"x402Version"`
	Scheme      string          `json:"scheme"`
	Network     string          `json:"network"`
	Payload     json.RawMessage `json:"payload"`
}

// readFacilitatorRequest decodes a verify/settle body; on failure it has
// already written the error answer.
func readFacilitatorRequest(w http.ResponseWriter, r *http.Request) (PaymentPayload, PaymentRequirements, bool) {
	fail := func(status int, msg string) (PaymentPayload, PaymentRequirements, bool) {
		writeFacilitatorJSON(w, status, map[string]string{"error": msg})
		return PaymentPayload{}, PaymentRequirements{}, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxFacilitatorRequestBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return fail(http.StatusRequestEntityTooLarge, "request body too large")
		}
		return fail(http.StatusBadRequest, "cannot read the request body")
	}
	var env struct {
		X402Version         *int            `json:"x402Version"`
		PaymentPayload      json.RawMessage `json:"paymentPayload"`
		PaymentRequirements json.RawMessage `json:"paymentRequirements"`
	}
	if err := json.Unmarshal(body, &env); err != nil || !isJSONObject(body) {
		return fail(http.StatusBadRequest, "body must be a JSON object {x402Version, paymentPayload, paymentRequirements}")
	}
	if env.X402Version == nil {
		return fail(http.StatusBadRequest, "x402Version is required")
	}
	if !isJSONObject(env.PaymentPayload) || !isJSONObject(env.PaymentRequirements) {
		return fail(http.StatusBadRequest, "paymentPayload and paymentRequirements must be JSON objects")
	}
	switch *env.X402Version {
	case 2:
		var p PaymentPayload
		var req PaymentRequirements
		if err := json.Unmarshal(env.PaymentPayload, &p); err != nil {
			return fail(http.StatusBadRequest, "paymentPayload: "+jsonErrorSummary(err))
		}
		if err := json.Unmarshal(env.PaymentRequirements, &req); err != nil {
			return fail(http.StatusBadRequest, "paymentRequirements: "+jsonErrorSummary(err))
		}
		if p.X402Version != 2 {
			return fail(http.StatusBadRequest, "paymentPayload.x402Version must equal x402Version")
		}
		return p, req, true
	case 1:
		var p facilitatorV1Payload
		var req facilitatorV1Requirements
		if err := json.Unmarshal(env.PaymentPayload, &p); err != nil {
			return fail(http.StatusBadRequest, "paymentPayload: "+jsonErrorSummary(err))
		}
		if err := json.Unmarshal(env.PaymentRequirements, &req); err != nil {
			return fail(http.StatusBadRequest, "paymentRequirements: "+jsonErrorSummary(err))
		}
		if p.X402Version != 1 {
			return fail(http.StatusBadRequest, "paymentPayload.x402Version must equal x402Version")
		}
		return PaymentPayload{
				X402Version: 1,
				Accepted:    PaymentRequirements{Scheme: p.Scheme, Network: p.Network},
				Payload:     p.Payload,
			}, PaymentRequirements{
				Scheme:            req.Scheme,
				Network:           req.Network,
				Amount:            req.MaxAmountRequired,
				Asset:             req.Asset,
				PayTo:             req.PayTo,
				MaxTimeoutSeconds: req.MaxTimeoutSeconds,
				Extra:             req.Extra,
			}, true
	default:
		return fail(http.StatusBadRequest, "x402Version must be 1 or 2")
	}
}

// writeFacilitatorJSON writes v as a JSON answer with the given status.
func writeFacilitatorJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":"cannot encode the response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
