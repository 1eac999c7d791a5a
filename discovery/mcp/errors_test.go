package mcp_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/discovery"
	"github.com/seed1284c1d2/svc/discovery/mcp"
)

// failingSurfaces answers find_tool with a fixed error: the one error path
// the real Service cannot be made to take (a fault that is not an
// *svc.Error). Only Find is implemented.
type failingSurfaces struct {
	discovery.Surfaces
	err error
}

func (f failingSurfaces) Find(context.Context, string, int) (discovery.FindResult, error) {
	return discovery.FindResult{}, f.err
}

// TestToolErrors checks how errors of the discovery core reach a client:
// as tool errors (isError, not protocol errors), an *svc.Error with its
// message, any other error without its details (logged instead).
func TestToolErrors(t *testing.T) {
	for _, tc := range []struct {
		name        string
		err         error
		want, avoid string
		logged      bool
	}{
		{"unavailable", &svc.Error{Kind: svc.KindUnavailable, Message: "the finder is warming up"}, "the finder is warming up", "", false},
		{"internal svc error", &svc.Error{Kind: svc.KindInternal, Message: "internal error"}, "internal error", "", true},
		{"plain error", errors.New("index file /var/secret corrupt"), "find_tool failed on the server (internal error)", "/var/secret", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			h, err := mcp.NewHandler(failingSurfaces{err: tc.err}, mcp.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(h)
			defer ts.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcp.ToolFind, Arguments: map[string]any{"query": "gold"}})
			if err != nil {
				t.Fatalf("protocol error %v, want a tool error", err)
			}
			text := res.Content[0].(*sdk.TextContent).Text
			if !res.IsError || !strings.Contains(text, tc.want) || res.StructuredContent != nil {
				t.Fatalf("isError=%v text %q structured %v", res.IsError, text, res.StructuredContent)
			}
			if tc.avoid != "" && strings.Contains(text, tc.avoid) {
				t.Fatalf("the message leaks %q: %q", tc.avoid, text)
			}
			if got := strings.Contains(logs.String(), "mcp tool failed"); got != tc.logged {
				t.Fatalf("logged %v, want %v: %s", got, tc.logged, logs.String())
			}
		})
	}
}
