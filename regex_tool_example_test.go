package svc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/seed1284c1d2/svc"
)

func ExampleRegexTest() {
	ctx := context.Background()
	resp, err := svc.RegexTest(ctx, svc.RegexTestRequest{
		Pattern: `(?<word>\p{L}+)-(\d+)?`,
		Flags:   "gu",
		Text:    "😀 café-1, naïve-, x-22",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Matched, resp.Matches)
	for _, d := range resp.Details {
		out, _ := json.Marshal(d)
		fmt.Println(string(out))
	}

	// A pattern that backtracks catastrophically stops at the time limit.
	_, err = svc.RegexTest(ctx, svc.RegexTestRequest{
		Pattern: `(a+)+$`,
		Text:    strings.Repeat("a", 5000) + "b",
		Timeout: 50 * time.Millisecond,
	})
	fmt.Println(svc.KindOf(err))

	// A pattern JavaScript rejects is invalid input.
	_, err = svc.RegexTest(ctx, svc.RegexTestRequest{Pattern: `(?<n>a)\k<m>`, Text: "aa"})
	fmt.Println(err)
	// Output:
	// true [café-1 naïve- x-22]
	// {"index":3,"match":"café-1","groups":["café","1"],"namedGroups":{"word":"café"}}
	// {"index":11,"match":"naïve-","groups":["naïve",null],"namedGroups":{"word":"naïve"}}
	// {"index":19,"match":"x-22","groups":["x","22"],"namedGroups":{"word":"x"}}
	// timeout
	// invalid input: pattern: invalid regular expression: invalid named capture referenced: no group named "m" (at character 7)
}
