// Package replay is the xau.Terminal that replays a MetaTrader 5 history
// export (the CSV of MT5's "Export bars") up to a clock, never revealing a
// bar that had not completed by then, and the reader and writer of that
// format ([ParseMT5CSV], [WriteMT5CSV]). Values carry xau.SourceReplay.
//
// testdata/XAUUSD_M1_sample.csv is a sample produced by the simulated
// terminal (xau.Simulated.History) with WriteMT5CSV. To regenerate it after
// changing the simulation, run go generate ./xau/replay/ (or go test -run
// TestReplaySampleUpToDate -update ./xau/replay/).
package replay

//go:generate go test -run TestReplaySampleUpToDate -update .
