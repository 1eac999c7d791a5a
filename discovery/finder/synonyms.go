package finder

// findWordClasses are groups of interchangeable words of the trade and of
// programming, independent of any one tool: a query word of a group also
// searches the group's other words (with a penalty), so "candles" finds
// a tool described with bars. A tool's own vocabulary is in its
// descriptor (tools.Tool.Synonyms).
func findWordClasses() [][]string {
	return [][]string{
		{"bar", "candle", "candlestick", "kline"},
		{"check", "validate", "verify", "validator"},
		{"stats", "statistics"},
		{"ohlc", "ohlcv"},
		{"eth", "ethereum", "ether"},
		{"addr", "address"},
		{"regex", "regexp"},
		{"csv", "tsv"},
		{"jwt", "jws"},
		{"gold", "xau", "xauusd", "bullion"},
	}
}
