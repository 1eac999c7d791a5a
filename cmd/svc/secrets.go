package main

import (
	"net/netip"
	"net/url"
	"regexp"
	"strings"

	"github.com/seed1284c1d2/svc/internal/envflag"
)

// This file keeps credentials where they belong. The rule: no credential
// given to svc — in a flag, an environment variable or a file — appears on
// a free surface, in a log line, in the banner or in an error.
//
//   - URLs that are published (--base-url, --public-facilitator-url) are
//     refused when they carry credentials or a query.
//   - The facilitator URL is private: the documents name only its scheme
//     and host, or --public-facilitator-url when it is set.
//   - A database URL is shown with its password and password parameters
//     masked (scrub.DisplayDSN).
//   - Errors never repeat a URL that may hold credentials.
//   - As a last line of defence, every line svc writes to stderr (logs, the
//     banner, the final error) passes through a scrub.Secrets, which masks
//     the credential values it was given.

// publishedURLError checks a URL that svc publishes: an absolute http(s)
// URL with a host and no credentials, query or fragment. The message names
// the flag and never repeats the value, which may hold a credential.
func publishedURLError(flagName, raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return envflag.UsageError(flagName + " is not an absolute http(s) URL (the value is not repeated here: it may hold a credential)")
	case u.User != nil:
		return envflag.UsageError(flagName + " must not carry credentials (user:password@): it is published on every free surface")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return envflag.UsageError(flagName + " must not carry a query or a fragment: it is published on every free surface")
	}
	return nil
}

// privateURLError checks a URL that svc calls but never publishes (the
// facilitator, the MT5 bridge): an absolute http(s) URL with a host and
// no fragment. The message never repeats the value.
func privateURLError(flagName, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
		return envflag.UsageError(flagName + " is not an absolute http(s) URL without fragment (the value is not repeated here: it may hold a credential)")
	}
	return nil
}

// originOf returns scheme://host[:port] of an http(s) URL checked by
// privateURLError: what the documents say of a facilitator by default.
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
}

// isLoopbackURL reports whether an http(s) URL names a loopback host
// (localhost, 127.0.0.0/8, ::1).
func isLoopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if strings.EqualFold(h, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Unmap().IsLoopback()
}

// tokenVarWhere names, for an error, where a token was looked for: the
// variable itself when it is the default name (flagDefault), otherwise only
// the flag, so that a token given by mistake in place of a variable's name
// is never printed, whatever characters it has.
func tokenVarWhere(flag, flagDefault, name string) string {
	if name == flagDefault {
		return "$" + flagDefault
	}
	return "the variable " + flag + " names"
}

// envNameRE is the shape of an environment variable name.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// keyLikeRE matches what looks like a private key rather than a variable
// name: 64 hex digits, 0x optional.
var keyLikeRE = regexp.MustCompile(`^(0[xX])?[0-9a-fA-F]{64}$`)

// keyEnvError checks the value of --key-env, which names an environment
// variable. A private key given instead is refused without being
// repeated.
func keyEnvError(name string) error {
	return envNameError("--key-env", "PAYER_KEY", name)
}

// envNameError checks the value of a flag that names the environment
// variable holding a private key (flag; example is a variable name to
// show). A key given instead of the name is refused without being
// repeated.
func envNameError(flag, example, name string) error {
	switch {
	case keyLikeRE.MatchString(name):
		return envflag.UsageError(flag + " takes the NAME of an environment variable holding the private key, and the value given looks like a key itself " +
			"(it is not repeated here); e.g. export " + example + "=0x… then " + flag + " " + example)
	case !envNameRE.MatchString(name):
		return envflag.UsageError(flag + " takes the name of an environment variable (letters, digits and _, e.g. " + example + "); the value given is not one " +
			"(it is not repeated here, in case it is a key)")
	}
	return nil
}
