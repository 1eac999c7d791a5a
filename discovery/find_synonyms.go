package discovery

// The finder's concept table: the words and phrases users (people and
// agents) write when they need a tool, keyed by catalog key. It is product
// knowledge, kept here in code so that it is reviewed with the ranker.
// Phrases of several words earn a phrase bonus when they occur contiguously
// in a query; every word is also indexed in the synonyms field.

// findGoldWords name gold itself: all three gold tools share them.
func findGoldWords() []string {
	return []string{
		"gold", "xau", "xauusd", "xau usd", "xau/usd", "bullion", "ounce", "troy ounce",
		"precious metal", "yellow metal", "oro", "or jaune",
	}
}

// findTimeframeWords name the bar periods the two bar-based gold tools
// accept.
func findTimeframeWords() []string {
	return []string{"timeframe", "m1", "m5", "m15", "h1", "minute", "hour", "hourly"}
}

// findWordClasses are groups of interchangeable words: a query word of a
// group also searches the group's other words (with a penalty), so
// "candles" finds the tools named after bars.
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

// DefaultSynonyms returns the built-in vocabulary of the tool with the
// given catalog key ("risk-levels"), or nil for an unknown key. The slice
// is fresh on every call. DocsFromTools fills Doc.Synonyms with it.
func DefaultSynonyms(key string) []string {
	switch key {
	case "session-state":
		return []string{
			"session", "sessions", "trading session", "market session", "session clock",
			"london", "london open", "london session", "london close",
			"new york", "new york session", "new york open", "ny session", "ny open", "nyse hours", "wall street",
			"asia", "asian session", "tokyo", "tokyo session",
			"market hours", "trading hours", "opening hours", "market open", "is the market open", "open now",
			"what time", "time of day", "minute of day", "vienna time", "clock", "overlap", "session overlap",
			"killzone", "kill zone", "forex sessions", "weekend", "daylight saving", "dst", "timezone", "time zone",
		}
	case "risk-levels":
		return []string{
			"stop loss", "stop-loss", "stoploss", "sl", "take profit", "take-profit", "takeprofit", "tp",
			"profit target", "target price", "stop price", "protective stop", "stop level", "stop and target",
			"exit levels", "bracket order", "risk reward", "risk/reward", "reward to risk", "r:r", "rr", "r multiple",
			"position sizing", "risk management", "stop distance", "target distance", "percent stop", "pips",
		}
	case "strategy-grade":
		return []string{
			"backtest", "back test", "backtesting", "backtest results", "strategy", "trading strategy",
			"trading system", "system", "expert advisor", "ea", "algo", "bot", "robust", "robustness",
			"overfit", "overfitting", "curve fitting", "profit factor", "win rate", "winrate", "hit rate",
			"drawdown", "max drawdown", "walk forward", "walk-forward", "out of sample", "track record",
			"grade", "score", "rating", "rate", "evaluate", "assess", "trust", "reliable", "edge", "expectancy",
			"sample size", "good strategy",
		}
	case "xau-quote":
		return append(findGoldWords(),
			"quote", "price", "price now", "current price", "spot", "spot price", "live price", "latest price",
			"bid", "ask", "bid ask", "bid/ask", "spread", "last price", "tick", "last tick", "trading at",
			"per ounce", "how much is gold", "real time", "realtime", "precio", "preis", "goldpreis", "prix", "kurs",
		)
	case "xau-bars":
		return append(append(findGoldWords(),
			"bars", "candles", "candlesticks", "candlestick", "ohlc", "ohlcv", "history", "historical",
			"price history", "historical data", "chart", "chart data", "minute bars", "hourly bars",
			"kline", "klines", "time series", "download", "fetch bars", "series", "past prices",
		), findTimeframeWords()...)
	case "xau-market-state":
		return append(append(findGoldWords(),
			"trend", "trending", "volatility", "volatile", "realized volatility", "atr", "average true range",
			"range position", "return", "market state", "market regime", "regime", "conditions",
			"market conditions", "momentum", "slope", "overbought", "oversold", "ranging", "range",
			"technical analysis", "analysis", "up or down",
		), findTimeframeWords()...)
	case "ohlcv-state":
		return []string{
			"ohlc", "ohlcv", "bars", "candles", "candlesticks", "candle data", "atr", "average true range",
			"true range", "range position", "return", "percent return", "statistics", "stats", "summary",
			"supplied bars", "my bars", "my candles", "my data", "own data", "own candles", "own bars",
			"these bars", "these candles", "given bars", "provided bars", "price series", "provide", "paste",
			"open high low close", "any symbol", "any instrument", "stock", "stocks", "bitcoin", "btc", "eurusd",
			"forex pair", "volatility",
		}
	case "csv-profile":
		return []string{
			"csv", "tsv", "comma separated", "comma-separated values", "tab separated", "semicolon", "delimiter",
			"spreadsheet", "excel", "table", "tabular", "columns", "column types", "column statistics", "rows",
			"header", "data profile", "profiling", "profile", "missing values", "nulls", "data quality",
			"dataset", "data set", "infer types", "sheet", "export", "sniff",
		}
	case "json-shape":
		return []string{
			"json", "json structure", "json schema", "schema", "infer schema", "structure", "shape", "keys",
			"paths", "json paths", "jsonpath", "nested", "fields", "properties", "payload", "api response",
			"response", "document", "object", "tree", "depth", "blob",
		}
	case "jwt-decode":
		return []string{
			"jwt", "json web token", "token", "decode token", "bearer", "bearer token", "authorization header",
			"auth header", "claims", "payload", "exp", "expiry", "expired", "expire", "expiration", "iat", "nbf",
			"id token", "access token", "oauth", "openid", "oidc", "jws", "jeton", "decode", "decoder",
			"inspect token", "session token",
		}
	case "evm-address-syntax":
		return []string{
			"evm", "ethereum", "eth", "ether", "address", "wallet", "wallet address", "validate wallet",
			"validate address", "ethereum address", "eth address", "addr", "checksum", "eip-55", "eip55", "0x",
			"hex address", "base wallet", "polygon", "arbitrum", "bsc", "recipient", "mixed case",
			"valid address", "well formed", "format check", "usdc",
		}
	case "tick-pnl":
		return []string{
			"futures", "future", "ticks", "tick", "tick value", "tick size", "p&l", "pnl", "profit and loss",
			"profit", "loss", "gain", "contracts", "contract", "es", "nq", "cl", "crude", "crude oil", "emini",
			"e-mini", "points", "trade result", "made", "lose", "lost",
		}
	case "regex-test":
		return []string{
			"regex", "regexp", "regular expression", "pattern", "pattern match", "match", "matches",
			"regex tester", "test regex", "capture group", "capture groups", "named groups", "flags",
			"javascript regex", "js regex", "extract", "search text", "text match", "wildcard", "grep",
		}
	}
	return nil
}
