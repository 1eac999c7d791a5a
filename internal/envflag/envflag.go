// Package envflag is a command-line flag set whose flags may take their
// default from an environment variable, with help grouped by topic,
// flags between positional arguments, and byte sizes.
package envflag

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Set is a flag set whose flags may take their default from an SVC_*
// environment variable; an explicit flag wins over the variable.
type Set struct {
	*flag.FlagSet
	getenv   func(string) string
	errs     []string
	synopsis string
	help     io.Writer
	// Groups, when set, orders -h by topic: each group's title and its
	// flags' names; flags in no group are listed last, under "Other".
	Groups []Group
}

// Group is a topic of -h: its title and the names of its flags.
type Group struct {
	Title string
	Names []string
}

// New returns an empty set for the command name: getenv reads the
// environment, -h prints synopsis and the flags to stderr.
func New(name string, stderr io.Writer, getenv func(string) string, synopsis string) *Set {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// The flag package prints a parse error and the whole usage; run
	// prints the error once, and -h prints the usage (see parse).
	fs.SetOutput(io.Discard)
	f := &Set{FlagSet: fs, getenv: getenv, synopsis: synopsis, help: stderr}
	fs.Usage = func() {}
	return f
}

// PrintUsage writes the synopsis and the flags, by topic when groups are
// set.
func (f *Set) PrintUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s\n", f.synopsis)
	hasEnv := false
	f.VisitAll(func(x *flag.Flag) { hasEnv = hasEnv || strings.Contains(x.Usage, "(env ") })
	if hasEnv {
		fmt.Fprint(w, "\nA flag wins over its environment variable.\n")
	}
	if len(f.Groups) == 0 {
		var all []*flag.Flag
		f.VisitAll(func(x *flag.Flag) { all = append(all, x) })
		printFlags(w, "Flags", all)
		return
	}
	listed := map[string]bool{}
	for _, g := range f.Groups {
		var fl []*flag.Flag
		for _, n := range g.Names {
			if x := f.Lookup(n); x != nil {
				fl = append(fl, x)
				listed[n] = true
			}
		}
		printFlags(w, g.Title, fl)
	}
	var rest []*flag.Flag
	f.VisitAll(func(x *flag.Flag) {
		if !listed[x.Name] {
			rest = append(rest, x)
		}
	})
	printFlags(w, "Other", rest)
}

// printFlags writes one topic of -h in the layout of flag.PrintDefaults.
func printFlags(w io.Writer, title string, fl []*flag.Flag) {
	if len(fl) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s:\n", title)
	for _, x := range fl {
		name, usage := flag.UnquoteUsage(x)
		line := "  --" + x.Name
		if name != "" {
			line += " " + name
		}
		usage = strings.ReplaceAll(usage, "\n", "\n    \t")
		if d := x.DefValue; d != "" && d != "0" && d != "false" && d != "0s" {
			if name == "string" {
				d = strconv.Quote(d)
			}
			usage += " (default " + d + ")"
		}
		fmt.Fprintf(w, "%s\n    \t%s\n", line, usage)
	}
}

// env returns the variable's value, "" when unset or no name is given.
func (f *Set) env(name string) string {
	if name == "" {
		return ""
	}
	return strings.TrimSpace(f.getenv(name))
}

// withEnv appends the name of the variable env to a flag's usage.
func withEnv(usage, env string) string {
	if env == "" {
		return usage
	}
	return usage + " (env " + env + ")"
}

// String defines a string flag defaulting to $env, else def.
func (f *Set) String(name, env, def, usage string) *string {
	if v := f.env(env); v != "" {
		def = v
	}
	return f.FlagSet.String(name, def, withEnv(usage, env))
}

// Duration defines a duration flag defaulting to $env, else def.
func (f *Set) Duration(name, env string, def time.Duration, usage string) *time.Duration {
	if v := f.env(env); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			f.errs = append(f.errs, fmt.Sprintf("%s=%q is not a duration (e.g. 100ms, 2s)", env, v))
		} else {
			def = d
		}
	}
	return f.FlagSet.Duration(name, def, withEnv(usage, env))
}

// Float defines a float flag defaulting to $env, else def.
func (f *Set) Float(name, env string, def float64, usage string) *float64 {
	if v := f.env(env); v != "" {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			f.errs = append(f.errs, fmt.Sprintf("%s=%q is not a number", env, v))
		} else {
			def = x
		}
	}
	return f.FlagSet.Float64(name, def, withEnv(usage, env))
}

// Int defines an int flag defaulting to $env, else def.
func (f *Set) Int(name, env string, def int, usage string) *int {
	if v := f.env(env); v != "" {
		x, err := strconv.Atoi(v)
		if err != nil {
			f.errs = append(f.errs, fmt.Sprintf("%s=%q is not an integer", env, v))
		} else {
			def = x
		}
	}
	return f.FlagSet.Int(name, def, withEnv(usage, env))
}

// List defines a repeatable flag; $env holds comma-separated values used
// when the flag is not given.
func (f *Set) List(name, env, usage string) *List {
	l := &List{}
	if v := f.env(env); v != "" {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				l.values = append(l.values, p)
			}
		}
		l.fromEnv = true
	}
	if env != "" {
		env += ", comma-separated"
	}
	f.FlagSet.Var(l, name, withEnv(usage, env))
	return l
}

// EnvBool defines a boolean flag defaulting to $env (true, false, 1, 0...),
// else def.
func (f *Set) EnvBool(name, env string, def bool, usage string) *bool {
	if v := f.env(env); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			f.errs = append(f.errs, fmt.Sprintf("%s=%q is not a boolean (true or false)", env, v))
		} else {
			def = b
		}
	}
	return f.FlagSet.Bool(name, def, withEnv(usage, env))
}

// Parse parses args and reports the environment's malformed values. -h
// prints the usage; a parse error is returned (the caller prints it once, as a UsageError) with a
// pointer to -h.
func (f *Set) Parse(args []string) error {
	if err := f.FlagSet.Parse(args); err != nil {
		if err == flag.ErrHelp {
			f.PrintUsage(f.help)
			return err
		}
		return UsageError(fmt.Sprintf("%v (svc %s -h lists the flags)", err, f.Name()))
	}
	if len(f.errs) > 0 {
		return UsageError(strings.Join(f.errs, "; "))
	}
	return nil
}

// ParseNoArgs is Parse for a command that takes no positional argument:
// one is a usage error naming it.
func (f *Set) ParseNoArgs(args []string) error {
	if err := f.Parse(args); err != nil {
		return err
	}
	if f.NArg() > 0 {
		return UsageError(fmt.Sprintf("svc %s takes no arguments, got %q", f.Name(), f.Arg(0)))
	}
	return nil
}

// ParseInterspersed parses args with flags before, between and after the
// positional arguments, which it returns in order ("svc call --url U
// xau-bars --query count=3": the standard flag package would stop at
// xau-bars and drop every flag after it). "--" ends the flags: what
// follows is positional.
func (f *Set) ParseInterspersed(args []string) ([]string, error) {
	var positional []string
	for {
		dashes := slices.Index(args, "--")
		if err := f.Parse(args); err != nil {
			return nil, err
		}
		rest := f.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		// Parse stopped at "--" (consumed) or at a positional argument.
		if dashes >= 0 && len(args)-dashes-1 == len(rest) {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// List is a repeatable flag. Values given on the command line replace
// those from the environment.
type List struct {
	values  []string
	fromEnv bool
}

// Values returns the values, in order.
func (l *List) Values() []string { return l.values }

// String implements flag.Value.
func (l *List) String() string { return strings.Join(l.values, ",") }

// Set implements flag.Value.
func (l *List) Set(v string) error {
	if l.fromEnv {
		l.values, l.fromEnv = nil, false
	}
	l.values = append(l.values, v)
	return nil
}

// ParseBytes reads a byte size: a plain integer or one with a suffix KiB,
// MiB, KB, MB, K or M ("2MiB", "512KiB", "2097152").
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"KB", 1000}, {"MB", 1000 * 1000}, {"K", 1 << 10}, {"M", 1 << 20}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("%q is not a positive byte size (e.g. 2MiB, 512KiB, 2097152)", s)
	}
	return n * mult, nil
}

// UsageError is a command line that cannot be run: the command prints it
// and exits with status 2.
type UsageError string

// Error implements error.
func (e UsageError) Error() string { return string(e) }
