package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/internal/envflag"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/client"
)

// maxAnswerBytes bounds an answer `svc call` and `svc tools` read.
const maxAnswerBytes = 16 << 20

// callOutput is what `svc call` prints: the answer's status, its JSON
// body and the decoded PAYMENT-RESPONSE.
type callOutput struct {
	Status     int                  `json:"status"`
	Result     json.RawMessage      `json:"result"`
	Settlement *x402.SettleResponse `json:"settlement"`
}

// call pays for one call of a tool and prints the result and the
// settlement.
func call(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	f := envflag.New("call", stderr, getenv, "svc call <tool-key> [--json '{...}' | --query k=v ...] --key-env VAR [--url URL] [--max 0.10] [--scheme batch-settlement [--deposit USD] [--channels DIR] [--refund]]")
	baseURL := f.String("url", "SVC_URL", "http://127.0.0.1:8080", "server base URL")
	jsonInput := f.String("json", "", "", "input as a JSON object (the body of a POST tool; query parameters of a GET tool)")
	query := f.List("query", "", "input parameter k=v (repeatable)")
	keyEnv := f.String("key-env", "", "", "name of the environment variable holding the payer's private key (64 hex digits, 0x optional); required")
	maxUSD := f.String("max", "", "0.10", "refuse to pay more than this many USD per call")
	network := f.String("network", "", x402.NetworkBase, "network the client agrees to pay on")
	schemes := addSchemeFlags(f)
	timeout := f.Duration("timeout", "", 90*time.Second, "time limit of the whole call")
	// Flags may come before and after the tool key, in any mix.
	positional, err := f.ParseInterspersed(args)
	if err != nil {
		return err
	}
	if len(positional) == 0 {
		return envflag.UsageError("svc call needs a tool key (svc tools lists them)")
	}
	if len(positional) > 1 {
		return envflag.UsageError(fmt.Sprintf("unexpected argument %q after the tool key %q: give the input with --query k=v or --json '{...}'",
			clip.Runes(positional[1], 60), clip.Runes(positional[0], 60)))
	}
	key := positional[0]
	if *keyEnv == "" {
		return envflag.UsageError("--key-env names the environment variable holding the payer's private key")
	}
	if err := keyEnvError(*keyEnv); err != nil {
		return err
	}
	if err := schemes.check(); err != nil {
		return err
	}
	if *jsonInput != "" && len(query.Values()) > 0 {
		return envflag.UsageError("give the input with --json or with --query, not both")
	}
	if err := checkQueryFlags(query.Values()); err != nil {
		return err
	}
	hexKey := strings.TrimSpace(getenv(*keyEnv))
	if hexKey == "" {
		return envflag.UsageError(fmt.Sprintf("the environment variable %s is empty", *keyEnv))
	}
	signer, err := client.ParseSigner(hexKey)
	if err != nil {
		return fmt.Errorf("the key in %s: %w", *keyEnv, err)
	}
	base := strings.TrimRight(*baseURL, "/")
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return envflag.UsageError(fmt.Sprintf("--url %q is not an http(s) URL", *baseURL))
	}

	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	item, err := findTool(ctx, base, key)
	if err != nil {
		if errors.Is(err, errServerDown) {
			return fmt.Errorf("%w: start one with `svc serve`, or point --url (SVC_URL) at yours", err)
		}
		return err
	}
	req, err := buildCallRequest(ctx, base, item, *jsonInput, query.Values())
	if err != nil {
		return err
	}
	opts, err := schemes.options(hexKey, strings.TrimPrefix(*maxUSD, "$"))
	if err != nil {
		return fmt.Errorf("--scheme %s: %w", *schemes.scheme, err)
	}
	hc := client.New(signer, append(opts, client.WithMaxAmount("$"+strings.TrimPrefix(*maxUSD, "$")), client.WithNetworks(*network))...)
	resp, err := hc.Do(req)
	if err != nil {
		if errors.Is(err, client.ErrAmountOverMax) {
			return envflag.UsageError(fmt.Sprintf("%s costs $%s a call, over the spend cap of $%s: raise it with --max %s",
				item.Key, item.PriceUSD, strings.TrimPrefix(*maxUSD, "$"), item.PriceUSD))
		}
		return fmt.Errorf("calling %s %s: %w", item.Method, item.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	out := callOutput{Status: resp.StatusCode, Result: jsonOrString(body)}
	if sr, err := client.PaymentResponse(resp); err == nil {
		out.Settlement = sr
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode == http.StatusPaymentRequired {
			if pr, err := client.PaymentRequiredOf(resp); err == nil && pr.Error != "" {
				return fmt.Errorf("payment refused: %s", pr.Error)
			}
		}
		return fmt.Errorf("the server answered %d", resp.StatusCode)
	}
	return nil
}

// checkQueryFlags checks the --query values before anything is sent:
// each is k=v, and no key is given twice (the server would refuse a GET
// tool's repeated parameter; a POST tool's body holds a member once).
func checkQueryFlags(values []string) error {
	seen := map[string]bool{}
	for _, kv := range values {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return envflag.UsageError(fmt.Sprintf("--query %q: want k=v", clip.Runes(kv, 60)))
		}
		if seen[k] {
			return envflag.UsageError(fmt.Sprintf("--query %s is given twice", clip.Runes(k, 60)))
		}
		seen[k] = true
	}
	return nil
}

// jsonOrString keeps a JSON body as is and turns anything else into a JSON
// string.
func jsonOrString(b []byte) json.RawMessage {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	if json.Valid(b) {
		return b
	}
	s, _ := json.Marshal(string(b))
	return s
}

// buildCallRequest builds the unpaid request of a tool call.
func buildCallRequest(ctx context.Context, base string, item catalogTool, jsonInput string, query []string) (*http.Request, error) {
	var input json.RawMessage
	if jsonInput != "" {
		if err := jsonInputError(jsonInput); err != nil {
			return nil, err
		}
		input = json.RawMessage(jsonInput)
	}
	q := url.Values{}
	for _, kv := range query {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, envflag.UsageError(fmt.Sprintf("--query %q: want k=v", kv))
		}
		q.Add(k, v)
	}
	target := base + item.Path
	var body io.Reader
	switch item.Method {
	case http.MethodGet:
		if input != nil {
			qi, err := tools.QueryOf(input)
			if err != nil {
				return nil, envflag.UsageError("--json for a GET tool must be an object of scalar values: " + err.Error())
			}
			q = qi
		}
		if len(q) > 0 {
			target += "?" + q.Encode()
		}
	default:
		if input == nil && len(q) > 0 {
			obj := map[string]json.RawMessage{}
			for k := range q {
				v := q.Get(k)
				if json.Valid([]byte(v)) && !strings.HasPrefix(strings.TrimSpace(v), "\"") {
					obj[k] = json.RawMessage(v) // numbers, booleans, objects
				} else {
					s, _ := json.Marshal(v)
					obj[k] = s
				}
			}
			b, _ := json.Marshal(obj)
			input = b
		}
		if input == nil {
			input = json.RawMessage("{}")
		}
		body = bytes.NewReader(input)
	}
	req, err := http.NewRequestWithContext(ctx, item.Method, target, body)
	if err != nil {
		return nil, fmt.Errorf("building the request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	return req, nil
}

// catalogTool is what the CLI needs of a catalog item.
type catalogTool struct {
	Key         string      `json:"key"`
	Name        string      `json:"name"`
	Method      string      `json:"method"`
	Path        string      `json:"path"`
	URL         string      `json:"url"`
	PriceUSD    json.Number `json:"priceUsd"`
	Network     string      `json:"network"`
	Description string      `json:"description"`
	Tags        []string    `json:"tags"`
}

// catalogPage is the body of GET /api/catalog.
type catalogPage struct {
	OK     bool              `json:"ok"`
	Total  int               `json:"total"`
	Offset int               `json:"offset"`
	Limit  int               `json:"limit"`
	Items  []json.RawMessage `json:"items"`
}

// fetchCatalog reads every page of a server's /api/catalog.
func fetchCatalog(ctx context.Context, base string) ([]json.RawMessage, error) {
	var items []json.RawMessage
	for offset := 0; ; {
		u := fmt.Sprintf("%s/api/catalog?offset=%d&limit=100", base, offset)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, fmt.Errorf("catalog: %w", err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) {
				return nil, fmt.Errorf("%w at %s", errServerDown, base)
			}
			return nil, fmt.Errorf("catalog: %w", err)
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("catalog: reading the answer: %w", err)
		}
		var page catalogPage
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &page) != nil || page.Items == nil {
			return nil, notSvcError(base, u, resp.StatusCode)
		}
		items = append(items, page.Items...)
		offset += len(page.Items)
		if len(page.Items) == 0 || offset >= page.Total {
			return items, nil
		}
	}
}

// notSvcError says that base serves no svc catalog (GET u answered
// status or something else than a catalog page): the hint for a base URL
// that ends in /api, and `svc pay` for another x402 server.
func notSvcError(base, u string, status int) error {
	msg := fmt.Sprintf("%s is not an svc server's base URL: GET %s answered %d, not svc's catalog", base, u, status)
	if strings.HasSuffix(strings.ToLower(base), "/api") {
		msg += fmt.Sprintf("; --url takes the base URL without /api (e.g. --url %s)", base[:len(base)-len("/api")])
	}
	return envflag.UsageError(msg + "; to pay any other x402 server, use svc pay URL")
}

// findTool looks a tool up in the server's catalog by its key (or its
// operation id).
func findTool(ctx context.Context, base, key string) (catalogTool, error) {
	items, err := fetchCatalog(ctx, base)
	if err != nil {
		return catalogTool{}, err
	}
	want := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(key)), "_", "-")
	var keys []string
	for _, raw := range items {
		var it catalogTool
		if err := json.Unmarshal(raw, &it); err != nil {
			continue
		}
		if it.Key == want {
			if it.Method == "" || !strings.HasPrefix(it.Path, "/") {
				return catalogTool{}, fmt.Errorf("catalog entry %s has no method or path", it.Key)
			}
			return it, nil
		}
		keys = append(keys, it.Key)
	}
	if near := closestKeys(want, keys); len(near) > 0 {
		return catalogTool{}, envflag.UsageError(fmt.Sprintf("no tool %q on %s; did you mean %s? (svc tools lists them all)", key, base, strings.Join(near, " or ")))
	}
	return catalogTool{}, envflag.UsageError(fmt.Sprintf("no tool %q on %s; tools: %s", key, base, strings.Join(keys, ", ")))
}
