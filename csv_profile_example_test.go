package svc_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/seed1284c1d2/svc"
)

// The published example: three data rows, the age column has one blank cell.
func ExampleCSVProfile() {
	resp, err := svc.CSVProfile(context.Background(), svc.CSVProfileRequest{
		CSV: "name,age\nAda,36\nBob,\nCara,29",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("delimiter %q, rows %d, columnCount %d\n", resp.Delimiter, resp.Rows, resp.ColumnCount)
	for _, c := range resp.Columns {
		out, _ := json.Marshal(c)
		fmt.Println(string(out))
	}
	// Output:
	// delimiter ",", rows 3, columnCount 2
	// {"name":"name","inferredType":"string","nonEmpty":3,"missing":0,"uniqueCount":3,"samples":["Ada","Bob","Cara"]}
	// {"name":"age","inferredType":"integer","nonEmpty":2,"missing":1,"uniqueCount":2,"numeric":{"count":2,"min":29,"max":36,"mean":32.5},"samples":["36","29"]}
}
