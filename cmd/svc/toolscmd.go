package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/seed1284c1d2/svc/internal/envflag"
	"github.com/seed1284c1d2/svc/tools"
)

// listTools prints the catalog: the local one, or a server's with --url.
func listTools(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	f := envflag.New("tools", stderr, getenv, "svc tools [--url URL] [--json]")
	baseURL := f.String("url", "SVC_URL", "", "read the catalog of the server at this base URL instead of the local one")
	asJSON := f.Bool("json", false, "print the catalog items as JSON")
	if err := f.ParseNoArgs(args); err != nil {
		return err
	}
	var items []json.RawMessage
	if *baseURL != "" {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		var err error
		if items, err = fetchCatalog(ctx, strings.TrimRight(*baseURL, "/")); err != nil {
			if errors.Is(err, errServerDown) {
				return fmt.Errorf("%w: start one with `svc serve`, or check --url", err)
			}
			return err
		}
	} else {
		c, err := tools.New(tools.Options{})
		if err != nil {
			return err
		}
		for _, it := range c.Items() {
			b, err := json.Marshal(it)
			if err != nil {
				return fmt.Errorf("encoding the catalog: %w", err)
			}
			items = append(items, b)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if items == nil {
			items = []json.RawMessage{}
		}
		return enc.Encode(items)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tMETHOD\tPATH\tPRICE (USD)\tNETWORK\tNAME")
	for _, raw := range items {
		var it catalogTool
		if err := json.Unmarshal(raw, &it); err != nil {
			return fmt.Errorf("catalog item: %w", err)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", it.Key, it.Method, it.Path, it.PriceUSD, it.Network, it.Name)
	}
	return tw.Flush()
}
