package store

import (
	"regexp"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/x402/engine"
)

// The embedded migrations of both dialects parse, are numbered 1..n without
// gaps, and describe the same changes (same versions and names).
func TestMigrationsAreContiguousAndParallel(t *testing.T) {
	var names [2][]string
	for i, dialect := range []string{"sqlite", "postgres"} {
		ms, err := migrations(dialect)
		if err != nil {
			t.Fatalf("migrations(%s): %v", dialect, err)
		}
		if len(ms) == 0 {
			t.Fatalf("no %s migrations", dialect)
		}
		for j, m := range ms {
			if m.version != j+1 {
				t.Fatalf("%s migration %d has version %d, want %d", dialect, j, m.version, j+1)
			}
			if strings.TrimSpace(m.sql) == "" {
				t.Fatalf("%s migration %d_%s is empty", dialect, m.version, m.name)
			}
			names[i] = append(names[i], m.name)
		}
	}
	if strings.Join(names[0], ",") != strings.Join(names[1], ",") {
		t.Fatalf("sqlite migrations %v and postgres migrations %v differ", names[0], names[1])
	}
	if _, err := migrations("oracle"); err == nil {
		t.Fatal("migrations of an unknown dialect succeeded")
	}
}

// The payments table's CHECK constraint, written by a migration (applied
// once, never edited), admits exactly the states of engine's transition
// table: a state added to the table needs a migration.
func TestPaymentsSchemaAdmitsTheTableStates(t *testing.T) {
	check := regexp.MustCompile(`(?s)CREATE TABLE payments \(.*?state\s+\w+\s+NOT NULL CHECK \(state IN (\([0-9, ]+\))\)`)
	for _, dialect := range []string{"sqlite", "postgres"} {
		ms, err := migrations(dialect)
		if err != nil {
			t.Fatalf("migrations(%s): %v", dialect, err)
		}
		var lists []string
		for _, m := range ms {
			if sub := check.FindStringSubmatch(m.sql); sub != nil {
				lists = append(lists, sub[1])
			}
		}
		if want := sqlStates(engine.AllStates); len(lists) != 1 || lists[0] != want {
			t.Errorf("%s: the payments table admits states %v, want %s", dialect, lists, want)
		}
	}
}
