package documents

import "testing"

// The MCP registry name of the remote endpoint is the reverse DNS of the
// host, then the service name.
func TestMCPRegistryName(t *testing.T) {
	for in, want := range map[string]string{
		"https://tools.example.com":       "com.example.tools/svc",
		"https://Tools.Example.com:8443/": "com.example.tools/svc",
		"http://127.0.0.1:8080":           "1.0.0.127/svc",
		"http://[::1]:8080":               "--1/svc",
	} {
		if got := mcpRegistryName(in, "svc"); got != want {
			t.Errorf("mcpRegistryName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNegotiate(t *testing.T) {
	offers := []string{"application/json", "text/html", "text/markdown", "text/plain"}
	for accept, want := range map[string]string{
		"":          "application/json",
		"*/*":       "application/json",
		"text/html": "text/html",
		"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8": "text/html",
		"application/json, text/html;q=0.5":                               "application/json",
		"text/html;q=0.5, application/json":                               "application/json",
		"text/plain":                                                      "text/plain",
		"text/markdown, text/plain;q=0.9":                                 "text/markdown",
		"image/png":                                                       "application/json",
		"text/html;q=0":                                                   "application/json",
		"garbage;;;":                                                      "application/json",
	} {
		if got := negotiate(accept, offers...); got != want {
			t.Errorf("negotiate(%q) = %q, want %q", accept, got, want)
		}
	}
}

// FuzzNegotiate checks that any Accept header picks one of the offers.
func FuzzNegotiate(f *testing.F) {
	for _, s := range []string{"", "*/*", "text/html;q=0.9, */*;q=0.1", "text/*;q=0.5,application/json;q=0.5", ";;;q=", "a/b;q=NaN", "text/html;q=1e400"} {
		f.Add(s)
	}
	offers := []string{"application/json", "text/html", "text/markdown", "text/plain"}
	f.Fuzz(func(t *testing.T, accept string) {
		got := negotiate(accept, offers...)
		for _, o := range offers {
			if got == o {
				return
			}
		}
		t.Fatalf("negotiate(%q) = %q, not an offer", accept, got)
	})
}
