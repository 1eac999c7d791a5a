package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/internal/envflag"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/client"
)

// payOutput is what `svc pay --json` prints, and --dry-run always: the
// answer's status and body, the settlement of a paid answer, and for a
// dry run the offer and the requirement the client would pay.
type payOutput struct {
	Status     int                       `json:"status"`
	Body       json.RawMessage           `json:"body,omitempty"`
	Settlement *x402.SettleResponse      `json:"settlement,omitempty"`
	Offer      *x402.PaymentRequired     `json:"offer,omitempty"`
	WouldPay   *x402.PaymentRequirements `json:"wouldPay,omitempty"`
	Why        []string                  `json:"refused,omitempty"`
}

// payCmd runs `svc pay`: one HTTP request to any x402 server (svc's or
// another's, v2 or v1), paid when it answers 402, with curl's habits: -X,
// -d (@file, @- for stdin), -H. The answer's body goes to stdout and a line
// about the payment to stderr; --json prints both as one JSON object;
// --dry-run asks without paying and prints the offer.
func payCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) error {
	f := envflag.New("pay", stderr, getenv, "svc pay [-X METHOD] [-d BODY|@FILE|@-] [-H 'Name: value' ...] --key-env VAR [--max 0.10] [--scheme batch-settlement [--deposit USD] [--channels DIR] [--refund]] [--dry-run] URL")
	var method, data string
	headers := &envflag.List{}
	f.FlagSet.StringVar(&method, "X", "", "request method (default GET, or POST with -d)")
	f.FlagSet.StringVar(&method, "request", "", "request method (same as -X)")
	f.FlagSet.StringVar(&data, "d", "", "request body; @FILE reads a file, @- standard input (Content-Type application/json when it is JSON, else form-urlencoded, unless -H sets one)")
	f.FlagSet.StringVar(&data, "data", "", "request body (same as -d)")
	f.FlagSet.Var(headers, "H", "request header 'Name: value' (repeatable)")
	f.FlagSet.Var(headers, "header", "request header (same as -H)")
	keyEnv := f.String("key-env", "", "", "name of the environment variable holding the payer's private key (64 hex digits, 0x optional); required unless --dry-run")
	maxUSD := f.String("max", "", "0.10", "refuse to pay more than this many USD for the request")
	network := f.String("network", "", x402.NetworkBase, "network the client agrees to pay on (CAIP-2 id)")
	schemes := addSchemeFlags(f)
	dryRun := f.Bool("dry-run", false, "ask without paying: print the offer and what would be paid")
	asJSON := f.Bool("json", false, "print {status, body, settlement} as JSON instead of the body alone")
	timeout := f.Duration("timeout", "", 90*time.Second, "time limit of the whole exchange")
	positional, err := f.ParseInterspersed(args)
	if err != nil {
		return err
	}
	switch {
	case len(positional) == 0:
		return envflag.UsageError("svc pay needs the URL to call (svc call TOOL pays one of svc's tools by name)")
	case len(positional) > 1:
		return envflag.UsageError(fmt.Sprintf("unexpected argument %q after the URL (quote a body given with -d)", clip.Runes(positional[1], 60)))
	}
	target := positional[0]
	if u, err := url.Parse(target); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return envflag.UsageError(fmt.Sprintf("%q is not an http(s) URL", clip.Runes(target, 80)))
	}
	if err := schemes.check(); err != nil {
		return err
	}
	if _, ok := x402.LookupNetwork(strings.TrimSpace(*network)); !ok {
		return envflag.UsageError(fmt.Sprintf("--network %q is not a known network", clip.Runes(*network, 40)))
	}
	capUSD := strings.TrimPrefix(strings.TrimSpace(*maxUSD), "$")
	if _, err := x402.PriceToAtomic(capUSD, 6); err != nil {
		return envflag.UsageError(fmt.Sprintf("--max %q is not an amount of dollars", clip.Runes(*maxUSD, 40)))
	}
	body, err := payBody(data, stdin)
	if err != nil {
		return err
	}
	method = strings.ToUpper(strings.TrimSpace(method))
	if method == "" {
		method = http.MethodGet
		if data != "" {
			method = http.MethodPost
		}
	}
	hdr := http.Header{}
	for _, h := range headers.Values() {
		name, value, ok := strings.Cut(h, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t\r\n") {
			return envflag.UsageError(fmt.Sprintf("-H %q: want 'Name: value'", clip.Runes(h, 60)))
		}
		hdr.Add(name, strings.TrimSpace(value))
	}
	if body != nil && hdr.Get("Content-Type") == "" {
		if json.Valid(body) {
			hdr.Set("Content-Type", "application/json")
		} else {
			hdr.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	}

	var signer *client.Signer
	var hexKey string
	if !*dryRun {
		if *keyEnv == "" {
			return envflag.UsageError("--key-env names the environment variable holding the payer's private key (or --dry-run to see the offer)")
		}
		if err := keyEnvError(*keyEnv); err != nil {
			return err
		}
		hexKey = strings.TrimSpace(getenv(*keyEnv))
		if hexKey == "" {
			return envflag.UsageError(fmt.Sprintf("the environment variable %s is empty", *keyEnv))
		}
		if signer, err = client.ParseSigner(hexKey); err != nil {
			return fmt.Errorf("the key in %s: %w", *keyEnv, err)
		}
	}

	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, target, bytesOrNil(body))
	if err != nil {
		return envflag.UsageError(fmt.Sprintf("the request: %v", err))
	}
	req.Header = hdr
	opts, err := schemes.options(hexKey, capUSD)
	if err != nil {
		return fmt.Errorf("--scheme %s: %w", *schemes.scheme, err)
	}
	opts = append(opts, client.WithMaxAmount("$"+capUSD), client.WithNetworks(strings.TrimSpace(*network)))
	if *dryRun {
		return payDryRun(req, opts, stdout)
	}
	resp, err := client.New(signer, opts...).Do(req)
	if err != nil {
		var none *client.NoAcceptableError
		switch {
		case errors.As(err, &none) && errors.Is(err, client.ErrAmountOverMax):
			return envflag.UsageError(fmt.Sprintf("the price is over the spend cap of $%s (nothing was paid): %v; raise it with --max", capUSD, none))
		case errors.As(err, &none):
			return fmt.Errorf("nothing this client can pay is offered (nothing was paid): %v", none)
		}
		return fmt.Errorf("%s %s: %w", method, clip.Runes(target, 120), err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	sr, _ := client.PaymentResponse(resp)
	if *asJSON {
		out := payOutput{Status: resp.StatusCode, Body: jsonOrString(answer), Settlement: sr}
		if err := encodeIndented(stdout, out); err != nil {
			return err
		}
	} else if _, err := stdout.Write(answer); err != nil {
		return err
	}
	if sr != nil && sr.Success {
		fmt.Fprintln(stderr, "svc pay: "+settledLine(sr))
	}
	if resp.StatusCode >= 300 {
		if resp.StatusCode == http.StatusPaymentRequired {
			if pr, ok, _ := client.OfferOf(resp); ok && pr.Error != "" {
				return fmt.Errorf("payment refused: %s", clip.Runes(pr.Error, 200))
			}
		}
		return fmt.Errorf("the server answered %d", resp.StatusCode)
	}
	return nil
}

// payDryRun sends req unpaid and prints the offer of a 402 and what the
// client, with opts, would pay (or why it would pay nothing).
func payDryRun(req *http.Request, opts []client.Option, stdout io.Writer) error {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", req.Method, clip.Runes(req.URL.String(), 120), err)
	}
	defer resp.Body.Close()
	out := payOutput{Status: resp.StatusCode}
	if resp.StatusCode == http.StatusPaymentRequired {
		pr, ok, err := client.OfferOf(resp)
		if err != nil {
			return err
		}
		if ok {
			out.Offer = &pr
			t := &client.Transport{}
			for _, o := range opts {
				o(t)
			}
			i, err := t.Choose(pr.Accepts)
			var none *client.NoAcceptableError
			switch {
			case err == nil:
				out.WouldPay = &pr.Accepts[i]
			case errors.As(err, &none):
				for _, r := range none.Rejected {
					out.Why = append(out.Why, fmt.Sprintf("accepts[%d]: %s", r.Index, r.Detail))
				}
			default:
				return err
			}
		}
	}
	if out.Offer == nil {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
		out.Body = jsonOrString(b)
	}
	return encodeIndented(stdout, out)
}

// payBody reads -d's value: text as given, @FILE a file, @- stdin; nil
// when empty.
func payBody(data string, stdin io.Reader) ([]byte, error) {
	switch {
	case data == "":
		return nil, nil
	case data == "@-":
		b, err := io.ReadAll(io.LimitReader(stdin, maxAnswerBytes+1))
		if err != nil {
			return nil, fmt.Errorf("reading the body from standard input: %w", err)
		}
		if len(b) > maxAnswerBytes {
			return nil, envflag.UsageError(fmt.Sprintf("the body on standard input is over %d bytes", maxAnswerBytes))
		}
		return b, nil
	case strings.HasPrefix(data, "@"):
		b, err := os.ReadFile(data[1:])
		if err != nil {
			return nil, envflag.UsageError(fmt.Sprintf("-d %s: %v", clip.Runes(data, 80), errors.Unwrap(err)))
		}
		return b, nil
	}
	return []byte(data), nil
}

func bytesOrNil(b []byte) io.Reader {
	if b == nil {
		return nil
	}
	return bytes.NewReader(b)
}

// encodeIndented writes v as indented JSON, HTML characters unescaped.
func encodeIndented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// atomicUSDC prints an amount of a 6-decimal stablecoin's atomic units as
// dollars ("10000" → "0.01 USDC"); anything else as given.
func atomicUSDC(atomic string) string {
	v, ok := new(big.Int).SetString(atomic, 10)
	if !ok || v.Sign() < 0 {
		return atomic + " (atomic units)"
	}
	r := new(big.Rat).SetFrac(v, big.NewInt(1_000_000))
	s := strings.TrimRight(strings.TrimRight(r.FloatString(6), "0"), ".")
	return s + " USDC"
}

// quoteList quotes each name and joins them with " or ".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, " or ")
}
