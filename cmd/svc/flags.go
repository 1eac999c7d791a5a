package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// envFlags is a flag set whose flags may take their default from an SVC_*
// environment variable; an explicit flag wins over the variable.
type envFlags struct {
	*flag.FlagSet
	getenv   func(string) string
	errs     []string
	synopsis string
	help     io.Writer
	// groups, when set, orders -h by topic: each group's title and its
	// flags' names; flags in no group are listed last, under "Other".
	groups []flagGroup
}

// flagGroup is a topic of -h and the names of its flags.
type flagGroup struct {
	title string
	names []string
}

func newEnvFlags(name string, stderr io.Writer, getenv func(string) string, synopsis string) *envFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// The flag package prints a parse error and the whole usage; run
	// prints the error once, and -h prints the usage (see parse).
	fs.SetOutput(io.Discard)
	f := &envFlags{FlagSet: fs, getenv: getenv, synopsis: synopsis, help: stderr}
	fs.Usage = func() {}
	return f
}

// printUsage writes the synopsis and the flags, by topic when groups are
// set.
func (f *envFlags) printUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s\n", f.synopsis)
	hasEnv := false
	f.VisitAll(func(x *flag.Flag) { hasEnv = hasEnv || strings.Contains(x.Usage, "(env ") })
	if hasEnv {
		fmt.Fprint(w, "\nA flag wins over its environment variable.\n")
	}
	if len(f.groups) == 0 {
		var all []*flag.Flag
		f.VisitAll(func(x *flag.Flag) { all = append(all, x) })
		printFlags(w, "Flags", all)
		return
	}
	listed := map[string]bool{}
	for _, g := range f.groups {
		var fl []*flag.Flag
		for _, n := range g.names {
			if x := f.Lookup(n); x != nil {
				fl = append(fl, x)
				listed[n] = true
			}
		}
		printFlags(w, g.title, fl)
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
func (f *envFlags) env(name string) string {
	if name == "" {
		return ""
	}
	return strings.TrimSpace(f.getenv(name))
}

func withEnv(usage, env string) string {
	if env == "" {
		return usage
	}
	return usage + " (env " + env + ")"
}

// String defines a string flag defaulting to $env, else def.
func (f *envFlags) String(name, env, def, usage string) *string {
	if v := f.env(env); v != "" {
		def = v
	}
	return f.FlagSet.String(name, def, withEnv(usage, env))
}

// Duration defines a duration flag defaulting to $env, else def.
func (f *envFlags) Duration(name, env string, def time.Duration, usage string) *time.Duration {
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
func (f *envFlags) Float(name, env string, def float64, usage string) *float64 {
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
func (f *envFlags) Int(name, env string, def int, usage string) *int {
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
func (f *envFlags) List(name, env, usage string) *listFlag {
	l := &listFlag{}
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
func (f *envFlags) EnvBool(name, env string, def bool, usage string) *bool {
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

// parse parses args and reports the environment's malformed values. -h
// prints the usage; a parse error is returned (run prints it once) with a
// pointer to -h.
func (f *envFlags) parse(args []string) error {
	if err := f.FlagSet.Parse(args); err != nil {
		if err == flag.ErrHelp {
			f.printUsage(f.help)
			return err
		}
		return usageError(fmt.Sprintf("%v (svc %s -h lists the flags)", err, f.Name()))
	}
	if len(f.errs) > 0 {
		return usageError(strings.Join(f.errs, "; "))
	}
	return nil
}

// parseNoArgs is parse for a command that takes no positional argument:
// one is a usage error naming it.
func (f *envFlags) parseNoArgs(args []string) error {
	if err := f.parse(args); err != nil {
		return err
	}
	if f.NArg() > 0 {
		return usageError(fmt.Sprintf("svc %s takes no arguments, got %q", f.Name(), f.Arg(0)))
	}
	return nil
}

// parseInterspersed parses args with flags before, between and after the
// positional arguments, which it returns in order ("svc call --url U
// xau-bars --query count=3": the standard flag package would stop at
// xau-bars and drop every flag after it). "--" ends the flags: what
// follows is positional.
func (f *envFlags) parseInterspersed(args []string) ([]string, error) {
	var positional []string
	for {
		dashes := slices.Index(args, "--")
		if err := f.parse(args); err != nil {
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

// listFlag is a repeatable flag. Values given on the command line replace
// those from the environment.
type listFlag struct {
	values  []string
	fromEnv bool
}

func (l *listFlag) String() string { return strings.Join(l.values, ",") }

func (l *listFlag) Set(v string) error {
	if l.fromEnv {
		l.values, l.fromEnv = nil, false
	}
	l.values = append(l.values, v)
	return nil
}

// parseBytes reads a byte size: a plain integer or one with a suffix KiB,
// MiB, KB, MB, K or M ("2MiB", "512KiB", "2097152").
func parseBytes(s string) (int64, error) {
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
