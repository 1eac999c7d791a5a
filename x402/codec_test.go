package x402

import (
	"encoding/base64"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestEncodeDecodeHeaderRoundTrip(t *testing.T) {
	req := testRequirements(t, NetworkBase)
	pr := PaymentRequired{X402Version: 2, Resource: ResourceInfo{URL: "https://x.test/a?b=c"}, Accepts: []PaymentRequirements{req}}
	s, err := EncodeHeader(pr)
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(s, "-_ \n") || len(s)%4 != 0 {
		t.Fatalf("not padded standard base64: %q", s)
	}
	var back PaymentRequired
	if err := DecodeHeader(s, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, pr) {
		t.Fatalf("round trip: %+v != %+v", back, pr)
	}
	// Unpadded is accepted too.
	var back2 PaymentRequired
	if err := DecodeHeader(strings.TrimRight(s, "="), &back2); err != nil || !reflect.DeepEqual(back2, pr) {
		t.Fatalf("unpadded: %v", err)
	}
	got, err := DecodePaymentRequired(s)
	if err != nil || !reflect.DeepEqual(got, pr) {
		t.Fatalf("DecodePaymentRequired: %+v, %v", got, err)
	}
}

func TestDecodeHeaderRejects(t *testing.T) {
	// {"a":"?>?"} encodes with '+' and '/' in standard base64.
	obj := `{"a":"?>?~~~"}`
	std := b64(obj)
	if !strings.ContainsAny(std, "+/") {
		t.Fatalf("test input %q has no + or /", std)
	}
	urlSafe := base64.URLEncoding.EncodeToString([]byte(obj))
	cases := map[string]struct {
		in   string
		kind error
	}{
		"empty":               {"", ErrHeaderMalformed},
		"url-safe":            {urlSafe, ErrHeaderMalformed},
		"space inside":        {std[:4] + " " + std[4:], ErrHeaderMalformed},
		"newline inside":      {std[:4] + "\n" + std[4:], ErrHeaderMalformed},
		"leading space":       {" " + std, ErrHeaderMalformed},
		"three pads":          {b64(`{"a":1}`) + "=", ErrHeaderMalformed},
		"pad in middle":       {"ab=c" + std, ErrHeaderMalformed},
		"bad length":          {b64(`{"a":1}`)[:5], ErrHeaderMalformed},
		"not json":            {b64("hello"), ErrHeaderMalformed},
		"json array":          {b64(`[1,2]`), ErrHeaderMalformed},
		"json null":           {b64(`null`), ErrHeaderMalformed},
		"trailing garbage":    {b64(`{"a":1}x`), ErrHeaderMalformed},
		"two objects":         {b64(`{"a":1}{"a":2}`), ErrHeaderMalformed},
		"truncated json":      {b64(`{"a":`), ErrHeaderMalformed},
		"wrong field type":    {b64(`{"x402Version":"2"}`), ErrHeaderMalformed},
		"too large":           {strings.Repeat("A", MaxHeaderBytes+4), ErrHeaderTooLarge},
		"too large, not b64!": {strings.Repeat("!", MaxHeaderBytes+1), ErrHeaderTooLarge},
	}
	for name, c := range cases {
		var v PaymentRequired
		err := DecodeHeader(c.in, &v)
		var he *HeaderError
		if !errors.As(err, &he) || !errors.Is(err, c.kind) {
			t.Errorf("%s: err = %v, want a *HeaderError of kind %v", name, err, c.kind)
			continue
		}
		if strings.Contains(err.Error(), c.in) && len(c.in) > 8 {
			t.Errorf("%s: error echoes the input", name)
		}
	}
	// Exactly MaxHeaderBytes is not refused for its size; one more byte is.
	var v map[string]any
	exact := b64(`{"a":"` + strings.Repeat("x", MaxHeaderBytes/4*3-8) + `"}`)
	if len(exact) != MaxHeaderBytes {
		t.Fatalf("test input is %d bytes", len(exact))
	}
	if err := DecodeHeader(exact, &v); err != nil {
		t.Errorf("%d-byte header: %v", len(exact), err)
	}
	if err := DecodeHeader(exact+"A", &v); !errors.Is(err, ErrHeaderTooLarge) {
		t.Errorf("%d-byte header: %v", len(exact)+1, err)
	}
}

func TestDecodePaymentPayload(t *testing.T) {
	req := testRequirements(t, NetworkBase)
	payload, _ := testPayment(t, req)
	s, err := EncodeHeader(payload)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodePaymentPayload(s)
	if err != nil {
		t.Fatal(err)
	}
	if got.X402Version != 2 || !reflect.DeepEqual(got.Accepted, payload.Accepted) || string(got.Payload) != string(payload.Payload) || got.Resource.URL != payload.Resource.URL {
		t.Fatalf("decoded %+v, want %+v", got, payload)
	}

	// v1: scheme and network at the top level.
	v1 := `{"x402Version":1,"scheme":"exact","network":"base","payload":` + string(payload.Payload) + `}`
	got, err = DecodePaymentPayload(b64(v1))
	if err != nil {
		t.Fatal(err)
	}
	if got.X402Version != 1 || got.Accepted.Scheme != "exact" || got.Accepted.Network != "base" || string(got.Payload) != string(payload.Payload) {
		t.Fatalf("v1 decoded %+v", got)
	}

	bad := map[string]string{
		"no version":        `{"accepted":{"scheme":"exact","network":"eip155:8453"},"payload":{}}`,
		"version 3":         `{"x402Version":3,"accepted":{"scheme":"exact","network":"eip155:8453"},"payload":{}}`,
		"version string":    `{"x402Version":"2","accepted":{"scheme":"exact","network":"eip155:8453"},"payload":{}}`,
		"no accepted":       `{"x402Version":2,"payload":{}}`,
		"no scheme":         `{"x402Version":2,"accepted":{"network":"eip155:8453"},"payload":{}}`,
		"no network":        `{"x402Version":2,"accepted":{"scheme":"exact"},"payload":{}}`,
		"no payload":        `{"x402Version":2,"accepted":{"scheme":"exact","network":"eip155:8453"}}`,
		"null payload":      `{"x402Version":2,"accepted":{"scheme":"exact","network":"eip155:8453"},"payload":null}`,
		"string payload":    `{"x402Version":2,"accepted":{"scheme":"exact","network":"eip155:8453"},"payload":"x"}`,
		"v1 without scheme": `{"x402Version":1,"network":"base","payload":{}}`,
	}
	for name, in := range bad {
		if _, err := DecodePaymentPayload(b64(in)); !errors.Is(err, ErrHeaderMalformed) {
			t.Errorf("%s: err = %v, want ErrHeaderMalformed", name, err)
		}
	}
}

func TestDecodePaymentRequiredRejects(t *testing.T) {
	for name, in := range map[string]string{
		"v1":            `{"x402Version":1,"accepts":[{"scheme":"exact","network":"base"}]}`,
		"no accepts":    `{"x402Version":2,"resource":{"url":"u"}}`,
		"empty accepts": `{"x402Version":2,"accepts":[]}`,
		"no network":    `{"x402Version":2,"accepts":[{"scheme":"exact"}]}`,
	} {
		if _, err := DecodePaymentRequired(b64(in)); !errors.Is(err, ErrHeaderMalformed) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestDecodeSettleResponse(t *testing.T) {
	ok := SettleResponse{Success: true, Transaction: "0xabc", Network: NetworkBase, Payer: "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266", Amount: "3400"}
	s, _ := EncodeHeader(ok)
	got, err := DecodeSettleResponse(s)
	if err != nil || !reflect.DeepEqual(got, ok) {
		t.Fatalf("%+v, %v", got, err)
	}
	// A failure is a decoded response, not an error.
	got, err = DecodeSettleResponse(b64(`{"success":false,"errorReason":"invalid_exact_evm_signature","transaction":"","network":"eip155:8453"}`))
	if err != nil || got.Success || got.ErrorReason != "invalid_exact_evm_signature" {
		t.Fatalf("failure response: %+v, %v", got, err)
	}
	for name, in := range map[string]string{
		"no success":    `{"transaction":"0x1","network":"eip155:8453"}`,
		"no network":    `{"success":true,"transaction":"0x1"}`,
		"empty network": `{"success":true,"transaction":"0x1","network":""}`,
	} {
		if _, err := DecodeSettleResponse(b64(in)); !errors.Is(err, ErrHeaderMalformed) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// FuzzDecodeHeader checks that no header value makes the decoders panic,
// and that what DecodePaymentPayload accepts survives a re-encoding.
func FuzzDecodeHeader(f *testing.F) {
	req := testRequirements(f, NetworkBase)
	payload, _ := testPayment(f, req)
	s, _ := EncodeHeader(payload)
	f.Add(s)
	f.Add(strings.TrimRight(s, "="))
	f.Add(b64(`{"x402Version":1,"scheme":"exact","network":"base","payload":{}}`))
	f.Add(b64(`{"success":true,"transaction":"0x1","network":"eip155:8453"}`))
	f.Add("")
	f.Add("====")
	f.Add("e30")
	f.Fuzz(func(t *testing.T, in string) {
		var m map[string]any
		_ = DecodeHeader(in, &m)
		_, _ = DecodeSettleResponse(in)
		_, _ = DecodePaymentRequired(in)
		p, err := DecodePaymentPayload(in)
		if err != nil {
			var he *HeaderError
			if !errors.As(err, &he) {
				t.Fatalf("error is not a *HeaderError: %v", err)
			}
			return
		}
		if p.X402Version != 1 && p.X402Version != 2 {
			t.Fatalf("accepted version %d", p.X402Version)
		}
		if p.X402Version == 2 {
			s2, err := EncodeHeader(p)
			if err != nil {
				t.Fatal(err)
			}
			p2, err := DecodePaymentPayload(s2)
			if err != nil {
				t.Fatalf("re-encoded payload refused: %v", err)
			}
			if p2.Accepted.Scheme != p.Accepted.Scheme || p2.Accepted.Network != p.Accepted.Network {
				t.Fatal("re-encoding changed the payload")
			}
		}
	})
}
