package tools

import (
	"context"
	"errors"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/xau"
)

// descriptors is the table of paid tools, in catalog order (the order of
// /api/catalog and openapi.json). Adding a tool is adding one entry here
// (and its file in the root package); every surface picks it up. The words
// people search it by are the finder's data (discovery/finder.Synonyms).
func descriptors() []func() (*entry, error) {
	return []func() (*entry, error){
		define(def[svc.SessionStateRequest, svc.SessionStateResponse]{
			meta: meta{
				key: "session-state", operationID: "session_state", name: "Trading session state",
				method: "GET", path: "/api/session-state", price: "0.005", location: InputQuery,
				tags: []string{"trading", "time"},
				description: "Reports which trading sessions are open at an instant, and the wall-clock minute of the day in Europe/Vienna (0-1439). " +
					"Sessions are defined in their home zones, so daylight-saving differences are handled by the tz database: " +
					"London 08:00-16:30 Europe/London, New York 08:00-17:00 America/New_York, Asia 09:00-15:00 Asia/Tokyo, " +
					"open on [open, close) Monday to Friday in the home zone (holidays are not modelled). " +
					"Example: 09:15 Vienna on a weekday gives london true, newYork false, asia false, minuteOfDay 555.\n\n" +
					"dateTime is optional (default: the time of the request): ISO 8601 with an offset (RFC 3339, +0200 or +02 offsets, basic format 20250331T071500Z); " +
					"without an offset it is read as UTC and the response says so (assumedUTC); years 1900-9999. " +
					"Also returned: the normalised instant in UTC and Vienna time, the weekday and each session's definition with its open and close on that Vienna date. " +
					"Pure computation: no market data is read.",
				fields: map[string]string{
					"dateTime": "Instant to evaluate, ISO 8601 with an offset: RFC 3339 (\"2025-03-31T09:15:00+02:00\" or \"...Z\"), offsets +0200 or +02 too, the basic format (\"20250331T071500Z\", \"20250331T091500+0200\"), fractional seconds with . or , (truncated to nanoseconds). The extended format without an offset (\"2025-03-31T07:15:00\") is read as UTC; a date alone (\"2025-03-31\") means 00:00 UTC. The year as written lies in 1900-9999. Optional: default is the current time.",
				},
				outFields: map[string]string{
					"timezone":    "Always \"Europe/Vienna\".",
					"london":      "London session (08:00-16:30 Europe/London, Mon-Fri) open.",
					"newYork":     "New York session (08:00-17:00 America/New_York, Mon-Fri) open.",
					"asia":        "Asia session (09:00-15:00 Asia/Tokyo, Mon-Fri) open.",
					"minuteOfDay": "Vienna wall-clock minute of the day, hour*60 + minute, 0-1439.",
					"utc":         "The evaluated instant, RFC 3339 in UTC.",
					"local":       "The evaluated instant, RFC 3339 with Vienna's offset.",
					"assumedUTC":  "True when dateTime had no offset and was read as UTC.",
					"sessions":    "The session definitions used, in the order london, newYork, asia.",
				},
				example: `{"dateTime":"2025-03-31T09:15:00+02:00"}`,
			},
			run: func(ctx context.Context, env Env, req svc.SessionStateRequest) (svc.SessionStateResponse, error) {
				req.Now = env.now()
				return svc.SessionState(ctx, req)
			},
		}),

		define(def[svc.RiskLevelsRequest, svc.RiskLevelsResponse]{
			meta: meta{
				key: "risk-levels", operationID: "risk_levels", name: "Risk levels",
				method: "POST", path: "/api/risk-levels", price: "0.005", location: InputBody,
				tags: []string{"trading", "risk"},
				description: "Computes stop-loss and take-profit prices from an entry price, a direction and distances in percent of the entry. " +
					"Long: stop = entry*(1 - slPct/100), target = entry*(1 + tpPct/100); short: stop = entry*(1 + slPct/100), target = entry*(1 - tpPct/100). " +
					"riskReward = |target - entry| / |entry - stop| (= tpPct/slPct); stopDistance and targetDistance are the absolute price distances. " +
					"Percentages are in percent: slPct 0.05 means 0.05 %, not 5 %.\n\n" +
					"Exact decimal arithmetic: entry 3500 long, slPct 0.05, tpPct 0.04 gives stop 3498.25, target 3501.4, riskReward 0.8 (a non-terminating ratio is rounded half-even to 8 places). " +
					"entry, slPct and tpPct must be > 0, and a level at or below zero (a long stop or a short target of 100 % or more) is invalid (rule level_positive). Places no order.",
				fields: map[string]string{
					"entry":     "Entry price, > 0.",
					"direction": "Trade direction: long or short.",
					"slPct":     "Stop distance in percent of the entry, > 0 (0.05 means 0.05 %).",
					"tpPct":     "Target distance in percent of the entry, > 0 (0.04 means 0.04 %).",
				},
				outFields: map[string]string{
					"stop":           "Stop-loss price.",
					"target":         "Take-profit price.",
					"riskReward":     "targetDistance / stopDistance.",
					"stopDistance":   "|entry - stop| = entry*slPct/100.",
					"targetDistance": "|target - entry| = entry*tpPct/100.",
				},
				example: `{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`,
			},
			run: func(ctx context.Context, _ Env, req svc.RiskLevelsRequest) (svc.RiskLevelsResponse, error) {
				return svc.RiskLevels(ctx, req)
			},
			pure: true,
		}),

		define(def[svc.StrategyGradeRequest, svc.StrategyGradeResponse]{
			meta: meta{
				key: "strategy-grade", operationID: "strategy_grade", name: "Strategy grade",
				method: "POST", path: "/api/strategy-grade", price: "0.02", location: InputBody,
				tags: []string{"trading", "risk"},
				description: "Scores how far a trading strategy's backtest or track record can be trusted, on 0-100, from five components each clamped to 0-100: " +
					"sample = 100*(1 - 10^(-trades/300)); pf = 100*(profitFactor - 1)/0.6; winRate = winRatePct; drawdown = 100 - maxDrawdownPct*10/3; walkForward = walkForwardPassPct. " +
					"score = 0.15*sample + 0.30*pf + 0.10*winRate + 0.20*drawdown + 0.25*walkForward, computed from the unrounded components and rounded to 1 decimal; components are reported rounded to 1 decimal. " +
					"Letter grade: A >= 85, B >= 70, C >= 55, D >= 40, else F.\n\n" +
					"Warnings flag weak evidence: fewer than 30 trades, a profit factor above 3 or below 1, a win rate above 90 %, a drawdown of 0 or of 30 % or more, a walk-forward pass rate below 50 %. " +
					"trades is a whole number >= 0, profitFactor >= 0, the three percentages in [0, 100]. It judges the statistics given; it runs no backtest.",
				fields: map[string]string{
					"trades":             "Number of trades, a whole number >= 0.",
					"profitFactor":       "Gross profit / gross loss, >= 0.",
					"winRatePct":         "Share of winning trades in percent, 0-100.",
					"maxDrawdownPct":     "Largest peak-to-trough equity drop in percent, 0-100.",
					"walkForwardPassPct": "Share of walk-forward (out-of-sample) windows that passed, in percent, 0-100.",
				},
				outFields: map[string]string{
					"score":      "Weighted score on 0-100, 1 decimal.",
					"grade":      "Letter for the score: A, B, C, D or F.",
					"components": "The five components on 0-100, 1 decimal.",
					"weights":    "The weights of the components in the score (they sum to 1).",
					"warnings":   "Weak or suspicious evidence; possibly empty.",
				},
				example: `{"trades":240,"profitFactor":1.45,"winRatePct":54,"maxDrawdownPct":12.5,"walkForwardPassPct":70}`,
			},
			run: func(ctx context.Context, _ Env, req svc.StrategyGradeRequest) (svc.StrategyGradeResponse, error) {
				return svc.StrategyGrade(ctx, req)
			},
			pure: true,
		}),

		define(def[svc.XAUQuoteRequest, svc.XAUQuoteResponse]{
			meta: meta{
				key: "xau-quote", operationID: "xau_quote", name: "Gold quote (XAUUSD)",
				method: "GET", path: "/api/xau/quote", price: "0.01", location: InputQuery, terminal: true,
				tags: []string{"gold", "trading", "market-data"},
				description: "Latest gold (XAUUSD) quote from the operator's read-only trading terminal (MetaTrader 5 through a bridge): bid, ask, spread = ask - bid, last (the bid for CFD symbols) and the tick time in UTC. " +
					"symbol is optional (default: the configured gold symbol, usually XAUUSD); broker spellings such as XAUUSD.a are accepted.\n\n" +
					"source says where the data comes from: \"mt5\" for the live terminal; \"simulated\" marks data from the built-in simulator (development servers), never real prices. " +
					"Quotes are checked before being passed on (bid > 0, ask >= bid, spread at most 1 % of the bid). While the market is closed the time is that of the last tick. " +
					"The terminal's availability and the symbol are checked before payment is requested: when it is down the answer is 503 and nothing is charged. The terminal is read-only: no order can be placed.",
				fields: map[string]string{
					"symbol": "Terminal symbol, 1-32 characters from A-Z a-z 0-9 . _ - # + !; optional, default the configured gold symbol (XAUUSD). A symbol the terminal does not serve is refused before payment (rule unknown_symbol).",
				},
				outFields: map[string]string{
					"symbol": "Symbol as the terminal spells it.",
					"bid":    "Best bid.",
					"ask":    "Best ask.",
					"spread": "ask - bid.",
					"last":   "Last price as the terminal charts it (the bid for XAUUSD).",
					"time":   "Tick time, RFC 3339 in UTC.",
					"source": "Where the quote comes from: mt5 (live), simulated (not real market data), replay, scripted.",
				},
				example: `{"symbol":"XAUUSD"}`,
			},
			run: func(ctx context.Context, env Env, req svc.XAUQuoteRequest) (svc.XAUQuoteResponse, error) {
				req.DefaultSymbol = env.DefaultSymbol
				return svc.XAUQuote(ctx, env.Terminal, req)
			},
			check:  probe(svc.XAUQuote),
			symbol: func(req svc.XAUQuoteRequest) string { return req.Symbol },
		}),

		define(def[svc.XAUBarsRequest, svc.XAUBarsResponse]{
			meta: meta{
				key: "xau-bars", operationID: "xau_bars", name: "Gold bars (XAUUSD)",
				method: "GET", path: "/api/xau/bars", price: "0.02", location: InputQuery, terminal: true,
				tags: []string{"gold", "trading", "market-data"},
				description: "Most recent OHLC bars of gold (XAUUSD, the configured symbol) from the operator's read-only trading terminal, oldest first: time (bar open, RFC 3339 UTC), open, high, low, close, tick_volume. " +
					"timeframe M1, M5, M15 or H1 (default M5); count 10 to 500 (default 100); fewer bars come back only when the terminal has less history. The last bar may still be forming. " +
					"The bars can be passed as they are to ohlcv_state.\n\n" +
					"source says where the data comes from: \"mt5\" for the live terminal; \"simulated\" marks data from the built-in simulator (development servers), never real prices. " +
					"Bars are checked before being passed on (OHLC consistency, aligned increasing times). " +
					"The terminal's availability is checked before payment is requested: when it is down the answer is 503 and nothing is charged.",
				fields: map[string]string{
					"timeframe": "Bar period: M1, M5, M15 or H1 (exact spelling). Optional, default M5.",
					"count":     "Number of bars, 10 to 500. Optional, default 100.",
				},
				defaults: map[string]string{"timeframe": `"M5"`, "count": "100"},
				outFields: map[string]string{
					"symbol":    "Terminal symbol of the bars.",
					"timeframe": "Bar period.",
					"count":     "Number of bars returned.",
					"bars":      "Bars, oldest first; time is the bar's open time (RFC 3339 UTC).",
					"source":    "Where the bars come from: mt5 (live), simulated (not real market data), replay, scripted.",
				},
				example: `{"timeframe":"M5","count":10}`,
			},
			run: func(ctx context.Context, env Env, req svc.XAUBarsRequest) (svc.XAUBarsResponse, error) {
				req.DefaultSymbol = env.DefaultSymbol
				return svc.XAUBars(ctx, env.Terminal, req)
			},
			check: probe(svc.XAUBars),
		}),

		define(def[svc.XAUMarketStateRequest, svc.XAUMarketStateResponse]{
			meta: meta{
				key: "xau-market-state", operationID: "xau_market_state", name: "Gold market state (XAUUSD)",
				method: "GET", path: "/api/xau/market-state", price: "0.03", location: InputQuery, terminal: true,
				tags: []string{"gold", "trading", "market-data"},
				description: "Computed state of the gold market (XAUUSD, the configured symbol) over the most recent bars of the operator's read-only trading terminal. " +
					"trend: up, down or flat from the least-squares slope of the closes in percent of the mean close per bar, against a threshold per timeframe (M1 0.0025, M5 0.005, M15 0.01, H1 0.02 % per bar); " +
					"atr: Wilder ATR(14); realizedVolPct: sample standard deviation of the log close-to-close returns * 100 (per bar, not annualised); " +
					"rangePosition = (last close - lowest low)/(highest high - lowest low), 0.5 for a zero range; returnPct = (last close - first close)/first close * 100; " +
					"plus the slope and the session flags (london, newYork, asia, minuteOfDay in Europe/Vienna) at the last bar's open time.\n\n" +
					"timeframe M1, M5, M15 or H1 (default M5); count 30 to 500 (default 100). " +
					"source says where the bars come from: \"mt5\" for the live terminal; \"simulated\" marks data from the built-in simulator (development servers), never real prices. " +
					"The terminal's availability is checked before payment is requested: when it is down the answer is 503 and nothing is charged. Not investment advice.",
				fields: map[string]string{
					"timeframe": "Bar period: M1, M5, M15 or H1 (exact spelling). Optional, default M5.",
					"count":     "Number of bars analysed, 30 to 500. Optional, default 100.",
				},
				defaults: map[string]string{"timeframe": `"M5"`, "count": "100"},
				outFields: map[string]string{
					"trend":             "up, down or flat.",
					"slope":             "Least-squares slope of the closes, price per bar.",
					"slopePctPerBar":    "slope / mean close * 100.",
					"trendThresholdPct": "Threshold of the trend on this timeframe, % per bar.",
					"atr":               "Wilder ATR(14).",
					"realizedVolPct":    "Standard deviation of log close-to-close returns * 100, per bar.",
					"rangePosition":     "(last close - lowest low)/(highest high - lowest low), 0 to 1.",
					"returnPct":         "(last close - first close)/first close * 100.",
					"source":            "Where the bars come from: mt5 (live), simulated (not real market data), replay, scripted.",
				},
				example: `{"timeframe":"M15","count":60}`,
			},
			run: func(ctx context.Context, env Env, req svc.XAUMarketStateRequest) (svc.XAUMarketStateResponse, error) {
				req.DefaultSymbol = env.DefaultSymbol
				return svc.XAUMarketState(ctx, env.Terminal, req)
			},
			check: probe(svc.XAUMarketState),
		}),

		define(def[svc.CSVProfileRequest, svc.CSVProfileResponse]{
			meta: meta{
				key: "csv-profile", operationID: "csv_profile", name: "CSV profile",
				method: "POST", path: "/api/csv-profile", price: "0.0025", location: InputBody,
				tags: []string{"data"},
				description: "Profiles CSV text (RFC 4180: quotes, doubled quotes, CRLF, BOM): the delimiter used, the row and column counts, and per column its inferred type (the narrowest of integer, number, boolean, date, datetime, string; empty when no value), non-empty, missing and distinct-value counts, and count/min/max/mean for numeric columns, in exact decimal arithmetic. " +
					"delimiter auto (default) picks among comma, semicolon, tab and pipe the one giving the most consistent field count; a name or a literal single character is also accepted. " +
					"hasHeader false names the columns column_1...column_n; duplicate or empty header names are made unique.\n\n" +
					"Ragged rows are counted and reported, not fatal; broken quoting is invalid input naming the line. The size is bounded by the request body limit. " +
					"The text is profiled in memory and never stored or sent anywhere.",
				fields: map[string]string{
					"csv":       "CSV text.",
					"delimiter": "auto, comma, semicolon, tab, pipe (case-insensitive) or one literal character other than a double quote, CR, LF or NUL. Optional, default auto.",
					"hasHeader": "Whether the first record names the columns. Optional, default true.",
				},
				defaults: map[string]string{"delimiter": `"auto"`, "hasHeader": "true"},
				outFields: map[string]string{
					"delimiter":   "Delimiter character used.",
					"rows":        "Number of data records (header and blank lines excluded).",
					"columnCount": "Number of fields of the first record.",
					"columns":     "Profile of each column, in order.",
					"raggedRows":  "Data records whose field count differs from columnCount.",
				},
				example: `{"csv":"name,age\nAda,36\nBob,\nCara,29"}`,
			},
			run: func(ctx context.Context, _ Env, req svc.CSVProfileRequest) (svc.CSVProfileResponse, error) {
				return svc.CSVProfile(ctx, req)
			},
			pure: true,
		}),

		define(def[svc.JSONShapeRequest, svc.JSONShapeResponse]{
			meta: meta{
				key: "json-shape", operationID: "json_shape", name: "JSON shape",
				method: "POST", path: "/api/json-shape", price: "0.0025", location: InputBody,
				tags: []string{"data"},
				description: "Describes the structure of a JSON value: every distinct path once, in first-seen depth-first order, with its sorted distinct types (object, array, string, integer, number, boolean, null) and how often it occurs. " +
					"Paths: the root is $, object members append .name (or [\"name\"] when the name is not an identifier), array elements append [] so all elements share one path ($.items[].id).\n\n" +
					"maxDepth (1-12, default 8; root = depth 0) stops the descent and maxPaths (10-1000, default 500) caps the paths listed; either sets a flag (depthLimited, pathsTruncated). " +
					"The value is inspected in memory and never stored or sent anywhere.",
				fields: map[string]string{
					"value":    "The JSON value to inspect: any JSON value (object, array, string, number, boolean or null).",
					"maxDepth": "Deepest depth listed (root = 0), 1 to 12. Optional, default 8.",
					"maxPaths": "Most distinct paths listed, 10 to 1000. Optional, default 500.",
				},
				defaults: map[string]string{"maxDepth": "8", "maxPaths": "500"},
				outFields: map[string]string{
					"rootType":  "Type of the value itself.",
					"pathCount": "Number of paths listed.",
					"paths":     "Every distinct path with its types and occurrence count.",
				},
				example: `{"value":{"user":{"id":7,"name":"Ada","tags":["admin","ops"]},"orders":[{"sku":"A1","qty":2},{"sku":"B2","qty":1.5,"note":null}]}}`,
			},
			run: func(ctx context.Context, _ Env, req svc.JSONShapeRequest) (svc.JSONShapeResponse, error) {
				return svc.JSONShape(ctx, req)
			},
			pure: true,
		}),

		define(def[svc.JWTDecodeRequest, svc.JWTDecodeResponse]{
			meta: meta{
				key: "jwt-decode", operationID: "jwt_decode", name: "JWT decode",
				method: "POST", path: "/api/jwt-decode", price: "0.0025", location: InputBody,
				tags: []string{"utility", "security"},
				description: "Decodes a JSON Web Token (compact JWS, header.payload.signature) WITHOUT verifying its signature: verified is always false, so never use the result to authorise anything. " +
					"Returns the header and payload JSON objects exactly as in the token, alg/typ/kid, whether a signature is present, the exp/nbf/iat claims as RFC 3339 and whether the token is expired or not yet valid now.\n\n" +
					"A leading \"Bearer \" is removed. Encrypted tokens (JWE, five parts), bad base64url and non-object JSON are invalid input with a reason; tokens over 64 KiB are refused. " +
					"The token is decoded in memory and never stored or logged.",
				fields: map[string]string{
					"token": "The JWT (header.payload.signature), optionally prefixed by \"Bearer \"; at most 64 KiB.",
				},
				outFields: map[string]string{
					"header":      "Decoded JOSE header (JSON object).",
					"payload":     "Decoded claims (JSON object).",
					"verified":    "Always false: the signature is not verified.",
					"timeClaims":  "exp, nbf and iat as RFC 3339 UTC timestamps.",
					"expired":     "Present when exp is: true when now >= exp.",
					"notYetValid": "Present when nbf is: true when now < nbf.",
				},
				example: `{"token":"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6IjIwMjUtMDYifQ.eyJzdWIiOiJhZ2VudC00MiIsInNjb3BlIjoicmVhZDpxdW90ZXMiLCJpYXQiOjE3NDg5OTUyMDAsIm5iZiI6MTc0ODk5NTIwMCwiZXhwIjoxNzQ5MDgxNjAwfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"}`,
			},
			run: func(ctx context.Context, env Env, req svc.JWTDecodeRequest) (svc.JWTDecodeResponse, error) {
				req.Now = env.now()
				return svc.JWTDecode(ctx, req)
			},
		}),

		define(def[svc.TickPnLRequest, svc.TickPnLResponse]{
			meta: meta{
				key: "tick-pnl", operationID: "tick_pnl", name: "Tick PnL",
				method: "POST", path: "/api/tick-pnl", price: "0.05", location: InputBody,
				tags: []string{"trading", "risk"},
				description: "Computes the result of a futures-style trade in ticks and money. " +
					"Long: ticks = (exit - entry)/tickSize; short: ticks = (entry - exit)/tickSize; pnl = ticks*tickValue*contracts. " +
					"Example: entry 100, exit 101, 2 contracts, tickSize 0.25, tickValue 12.5, long gives ticks 4, pnl 100.\n\n" +
					"Exact decimal arithmetic; when the move is not a whole number of ticks, ticks is rounded half-even to 8 places and pnl is the correctly rounded money result (wholeTicks false). " +
					"contracts, tickSize and tickValue must be > 0; entry and exit may be any price (zero and negative included). Places no order.",
				fields: map[string]string{
					"entry":     "Entry price.",
					"exit":      "Exit price.",
					"contracts": "Position size, > 0 (fractions allowed).",
					"tickSize":  "Minimum price increment, > 0.",
					"tickValue": "Money value of one tick for one contract, > 0.",
					"direction": "Trade direction: long or short.",
				},
				outFields: map[string]string{
					"ticks":      "Price move in ticks, positive when the trade gained.",
					"pnl":        "Profit (positive) or loss (negative) in the tick value's currency.",
					"wholeTicks": "Whether the move is a whole number of ticks.",
				},
				example: `{"entry":100,"exit":101,"contracts":2,"tickSize":0.25,"tickValue":12.5,"direction":"long"}`,
			},
			run: func(ctx context.Context, _ Env, req svc.TickPnLRequest) (svc.TickPnLResponse, error) {
				return svc.TickPnL(ctx, req)
			},
			pure: true,
		}),

		define(def[svc.EVMAddressSyntaxRequest, svc.EVMAddressSyntaxResponse]{
			meta: meta{
				key: "evm-address-syntax", operationID: "evm_address_syntax", name: "EVM address syntax",
				method: "POST", path: "/api/evm-address-syntax", price: "0.01", location: InputBody,
				tags: []string{"crypto", "utility"},
				description: "Checks the syntax of an EVM (Ethereum, Base, ...) address: valid iff the string is exactly 0x followed by 40 hex digits, nothing trimmed. " +
					"For a valid address it also reports the EIP-55 checksum status (valid, invalid: probably a typo, or none: single-case) and the checksummed form, and flags the zero address; for an invalid one the first broken rule (empty, prefix, length, hex).\n\n" +
					"An invalid address, the empty string included, is an answer (valid false), not an error. Syntax only: no network access, it says nothing about balances, contracts or ownership.",
				fields: map[string]string{
					"address": "Candidate address, e.g. 0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed; any string, the empty one included.",
				},
				outFields: map[string]string{
					"valid":       "True iff the address is 0x followed by exactly 40 hex digits.",
					"checksum":    "EIP-55 status of a valid address: valid, invalid or none.",
					"checksummed": "EIP-55 mixed-case form of a valid address.",
					"reasonCode":  "Why an address is not valid: empty, prefix, length or hex.",
				},
				example: `{"address":"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"}`,
			},
			run: func(ctx context.Context, _ Env, req svc.EVMAddressSyntaxRequest) (svc.EVMAddressSyntaxResponse, error) {
				return svc.EVMAddressSyntax(ctx, req)
			},
			pure: true,
		}),

		define(def[svc.OHLCVStateRequest, svc.OHLCVStateResponse]{
			meta: meta{
				key: "ohlcv-state", operationID: "ohlcv_state", name: "OHLCV state",
				method: "POST", path: "/api/ohlcv-state", price: "0.0025", location: InputBody,
				tags: []string{"trading", "data"},
				description: "Summarises a series of OHLC bars supplied by the caller (oldest first): returnPct = (last close - first close)/first close*100; " +
					"rangePosition = (last close - lowest low)/(highest high - lowest low), 0.5 when the range is zero; atr = mean true range over all bars (first bar: high - low). " +
					"Example: bars (100, 102, 99, 101), (101, 103, 100, 102) give rangePosition 0.75, atr 3.\n\n" +
					"1 to 10 000 bars; each needs open, high, low, close > 0 with low <= min(open, close) and high >= max(open, close) (errors name the bar, e.g. bars[3].high). " +
					"time, volume and tick_volume are optional and not used, so the bars of xau_bars can be passed as they are. Exact decimal arithmetic. No market data is read.",
				fields: map[string]string{
					"bars":               "The series, oldest first, 1 to 10 000 bars.",
					"bars[].open":        "Open price, > 0.",
					"bars[].high":        "High price, > 0, >= max(open, close).",
					"bars[].low":         "Low price, > 0, <= min(open, close).",
					"bars[].close":       "Close price, > 0.",
					"bars[].time":        "Optional label (e.g. RFC 3339), at most 64 characters; not used.",
					"bars[].volume":      "Optional volume, >= 0; not used.",
					"bars[].tick_volume": "Optional tick volume, >= 0; not used.",
				},
				outFields: map[string]string{
					"returnPct":     "(last close - first close)/first close*100.",
					"rangePosition": "Where the last close sits in the range, 0 (low) to 1 (high).",
					"atr":           "Mean true range over all bars.",
				},
				example: `{"bars":[{"open":100,"high":102,"low":99,"close":101},{"open":101,"high":103,"low":100,"close":102}]}`,
			},
			run: func(ctx context.Context, _ Env, req svc.OHLCVStateRequest) (svc.OHLCVStateResponse, error) {
				return svc.OHLCVState(ctx, req)
			},
			pure: true,
		}),

		define(def[svc.RegexTestRequest, svc.RegexTestResponse]{
			meta: meta{
				key: "regex-test", operationID: "regex_test", name: "Regex test",
				method: "POST", path: "/api/regex-test", price: "0.0034", location: InputBody,
				tags: []string{"utility", "regex"},
				description: "Runs a JavaScript regular expression on a text with the semantics of V8 (String.prototype.match / RegExp.prototype.exec). " +
					"With the g flag matches lists every matched substring (as text.match(/re/g)); without it, the first match only. " +
					"details gives each match's index (UTF-16 code units, as in JavaScript), capture groups (null where a group did not take part), named groups and, with d, indices.\n\n" +
					"Flags: d g i m s u y, each at most once; v is not supported. pattern at most 4 KiB, text at most 1 MiB. " +
					"Matching runs under a time limit (100 ms by default): a catastrophically backtracking pattern gets a clear timeout error, never a hung call. " +
					"At most 10 000 matches are returned (truncated flag). The text is matched in memory and never stored.",
				fields: map[string]string{
					"pattern": "JavaScript regular expression source without the slashes, e.g. (\\d+)-(\\d+); at most 4 KiB. May be empty.",
					"flags":   "JavaScript flags, each at most once, any order: d g i m s u y. Optional.",
					"text":    "Text to search; at most 1 MiB. May be empty.",
				},
				outFields: map[string]string{
					"matched": "Whether there is at least one match.",
					"matches": "Matched substrings: all of them with g, else the first.",
					"details": "One entry per match: index, match, groups, namedGroups, indices.",
				},
				example: `{"pattern":"(\\d{4})-(\\d{2})-(\\d{2})","flags":"g","text":"Released 2025-03-31, patched 2025-04-02."}`,
			},
			run: func(ctx context.Context, env Env, req svc.RegexTestRequest) (svc.RegexTestResponse, error) {
				req.Timeout = env.RegexTimeout
				return svc.RegexTest(ctx, req)
			},
		}),
	}
}

// errProbe is what probeTerminal answers.
var errProbe = errors.New("tools: validation probe: no terminal is called while validating")

// probeTerminal is a xau.Terminal that answers nothing. Validating a gold
// request runs the tool against it: the gold tools check their request
// before touching the terminal (documented), so the probe is reached only
// by a request that passed every rule, and no real terminal is called
// before payment.
type probeTerminal struct{}

func (probeTerminal) Source() xau.Source { return "validation-probe" }

func (probeTerminal) Health(context.Context) (xau.Health, error) { return xau.Health{}, errProbe }

func (probeTerminal) Quote(context.Context, string) (xau.Quote, error) {
	return xau.Quote{}, errProbe
}

func (probeTerminal) Bars(context.Context, string, xau.Timeframe, int) ([]xau.Bar, error) {
	return nil, errProbe
}

// probe returns the check of a gold tool: run it against probeTerminal; the
// request is valid when the tool got as far as the terminal.
func probe[Req, Resp any](tool func(context.Context, xau.Terminal, Req) (Resp, error)) func(context.Context, Req) error {
	return func(ctx context.Context, req Req) error {
		_, err := tool(ctx, probeTerminal{}, req)
		switch {
		case errors.Is(err, errProbe):
			return nil
		case err == nil:
			return &svc.Error{Kind: svc.KindInternal, Message: "internal error", Cause: errors.New("tools: a gold tool answered without its terminal")}
		}
		return err
	}
}
