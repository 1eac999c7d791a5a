package svc_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/seed1284c1d2/svc"
)

// Every distinct path once, with its sorted types and how often it occurs;
// array elements share one path, and a non-identifier name is quoted.
func ExampleJSONShape() {
	resp, err := svc.JSONShape(context.Background(), svc.JSONShapeRequest{
		Value: json.RawMessage(`{"items":[{"id":1,"unit price":2.5},{"id":"x"}],"next":null}`),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("rootType", resp.RootType, "pathCount", resp.PathCount)
	for _, p := range resp.Paths {
		fmt.Println(p.Path, p.Types, p.Occurrences)
	}
	// Output:
	// rootType object pathCount 6
	// $ [object] 1
	// $.items [array] 1
	// $.items[] [object] 2
	// $.items[].id [integer string] 2
	// $.items[]["unit price"] [number] 1
	// $.next [null] 1
}
