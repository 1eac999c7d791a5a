package svc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/seed1284c1d2/svc"
)

func ExampleJWTDecode() {
	token := "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9" +
		".eyJzdWIiOiJhZ2VudC03IiwiZXhwIjoxNzY3MjI1NjAwLCJpYXQiOjE3NjcxMzkyMDB9" +
		".c2lnbmF0dXJlLWJ5dGVz"
	resp, err := svc.JWTDecode(context.Background(), svc.JWTDecodeRequest{
		Token: "Bearer " + token,
		Now:   time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.MarshalIndent(resp, "", "  ")
	fmt.Println(string(out))

	_, err = svc.JWTDecode(context.Background(), svc.JWTDecodeRequest{Token: "a.b.c.d.e"})
	fmt.Println(err)
	// Output:
	// {
	//   "header": {
	//     "alg": "HS256",
	//     "typ": "JWT"
	//   },
	//   "payload": {
	//     "sub": "agent-7",
	//     "exp": 1767225600,
	//     "iat": 1767139200
	//   },
	//   "verified": false,
	//   "alg": "HS256",
	//   "typ": "JWT",
	//   "signaturePresent": true,
	//   "signatureBytes": 15,
	//   "timeClaims": {
	//     "exp": "2026-01-01T00:00:00Z",
	//     "iat": "2025-12-31T00:00:00Z"
	//   },
	//   "expired": true,
	//   "checkedAt": "2026-01-01T12:00:00Z"
	// }
	// invalid input: token: encrypted tokens (JWE) are not supported: the token has 5 parts; only signed tokens (JWS, 3 parts) can be decoded
}
