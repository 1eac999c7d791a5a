package store

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migrations are embedded per dialect as migrations/<dialect>/NNNN_name.sql:
// NNNN is the version (a positive integer, unique and increasing), name
// describes the change. A migration is applied once, in version order, in
// the same transaction as the schema_migrations row that records it; Open
// applies the pending ones. Never edit a released migration: add the next
// version. Migrations must stay backward compatible (add, don't remove) so
// that instances still running the previous build keep working while a
// rolling upgrade proceeds; a database whose schema is newer than the build
// is therefore accepted.
//
//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrationFiles embed.FS

// migration is one versioned schema change.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the migrations of dialect ("sqlite" or "postgres") in
// version order.
func migrations(dialect string) ([]migration, error) {
	dir := path.Join("migrations", dialect)
	entries, err := fs.ReadDir(migrationFiles, dir)
	if err != nil {
		return nil, fmt.Errorf("store: read %s migrations: %w", dialect, err)
	}
	var out []migration
	seen := map[int]string{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		base := strings.TrimSuffix(e.Name(), ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 || name == "" {
			return nil, fmt.Errorf("store: migration file %s: want NNNN_name.sql", e.Name())
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("store: migrations %s and %s share version %d", prev, e.Name(), v)
		}
		seen[v] = e.Name()
		raw, err := fs.ReadFile(migrationFiles, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("store: read migration %s: %w", e.Name(), err)
		}
		out = append(out, migration{version: v, name: name, sql: string(raw)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}
