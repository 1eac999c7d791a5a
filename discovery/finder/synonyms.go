package finder

// findWordClasses are groups of interchangeable words of the trade and of
// programming, independent of any one tool: a query word of a group also
// searches the group's other words (with a penalty), so "candles" finds
// a tool described with bars. A tool's own vocabulary is in Synonyms.
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

// Synonyms returns the words and phrases people and agents write when they
// need each paid tool ("stop loss", "take profit"), by the tool's catalog
// key, then by language: an ISO 639-1 code ("en", "fr", "es", "de", "it",
// "pt", "ru") to lower-case phrases in that language. The index weighs
// them next to a tool's name, tags, input fields and description; every
// tool of the catalog has English ones at least. Each call returns a new
// table the caller may keep.
func Synonyms() map[string]map[string][]string {
	return map[string]map[string][]string{
		"session-state": {
			"en": {
				"session", "sessions", "active session", "active sessions", "trading session", "market session", "session clock", "london", "london open",
				"london session", "london close", "new york", "new york session", "new york open", "ny session", "ny open",
				"nyse hours", "wall street", "asia", "asian session", "tokyo", "tokyo session", "market hours", "trading hours",
				"opening hours", "market open", "is the market open", "open now", "what time", "time of day", "minute of day",
				"vienna time", "clock", "overlap", "session overlap", "killzone", "kill zone", "forex sessions", "weekend",
				"daylight saving", "dst", "timezone", "time zone",
			},
			"fr": {
				"session de trading", "session", "séance", "heures de marché", "marché ouvert", "ouverture", "londres",
				"new york", "tokyo", "asie", "fuseau horaire", "heure de vienne", "ouverte", "ouvert",
			},
			"es": {
				"sesión", "sesión de trading", "horario del mercado", "mercado abierto", "apertura", "londres", "nueva york",
				"tokio", "asia", "zona horaria", "abierta", "abierto",
			},
			"de": {
				"handelssitzung", "sitzung", "handelszeiten", "börsenzeiten", "markt offen", "börse", "geöffnet", "offen",
				"london", "tokio", "zeitzone", "wiener zeit",
			},
			"it": {
				"sessione", "sessione di trading", "orari di mercato", "mercato aperto", "aperta", "aperto", "londra",
				"fuso orario",
			},
			"pt": {
				"sessão", "sessão de negociação", "horário do mercado", "mercado aberto", "aberta", "aberto", "londres",
				"nova york", "tóquio", "fuso horário",
			},
			"ru": {
				"сессия", "торговая сессия", "лондонская сессия", "часы торгов", "рынок открыт", "открыт", "лондон", "нью-йорк",
				"токио", "часовой пояс",
			},
		},
		"risk-levels": {
			"en": {
				"stop loss", "stop-loss", "stoploss", "sl", "take profit", "take-profit", "takeprofit", "tp", "profit target",
				"target price", "stop price", "protective stop", "stop level", "stop and target", "exit levels", "bracket order",
				"risk reward", "risk/reward", "reward to risk", "r:r", "rr", "r multiple", "position sizing", "risk management",
				"stop distance", "target distance", "percent stop", "pips",
			},
			"fr": {
				"stop loss", "take profit", "prise de bénéfice", "objectif de prix", "niveau de stop", "ratio risque rendement",
				"gestion du risque", "position longue", "position courte",
			},
			"es": {
				"stop loss", "take profit", "toma de ganancias", "precio objetivo", "nivel de stop", "relación riesgo beneficio",
				"gestión del riesgo", "niveles de riesgo",
			},
			"de": {
				"stop-loss", "take-profit", "kursziel", "gewinnziel", "stoppkurs", "chance-risiko-verhältnis",
				"risikomanagement", "long-position", "short-position", "einstiegskurs",
			},
			"it": {
				"stop loss", "take profit", "prezzo obiettivo", "livello di stop", "rapporto rischio rendimento",
				"gestione del rischio",
			},
			"pt": {
				"stop loss", "take profit", "preço alvo", "nível de stop", "relação risco retorno", "gestão de risco",
			},
			"ru": {
				"стоп-лосс", "стоп лосс", "тейк-профит", "тейк профит", "уровень стопа", "соотношение риска и прибыли",
				"риск-менеджмент", "точка входа",
			},
		},
		"strategy-grade": {
			"en": {
				"backtest", "back test", "backtesting", "backtest results", "strategy", "trading strategy", "trading system",
				"system", "expert advisor", "ea", "algo", "bot", "robust", "robustness", "overfit", "overfitting",
				"curve fitting", "profit factor", "win rate", "winrate", "hit rate", "drawdown", "max drawdown", "walk forward",
				"walk-forward", "out of sample", "track record", "grade", "score", "rating", "rate", "evaluate", "assess",
				"trust", "reliable", "edge", "expectancy", "sample size", "good strategy",
			},
			"fr": {
				"stratégie", "stratégie de trading", "robustesse", "robuste", "suroptimisation", "facteur de profit",
				"taux de réussite", "perte maximale", "système de trading", "évaluer",
			},
			"es": {
				"estrategia", "estrategia de trading", "robustez", "robusta", "sobreoptimización", "factor de beneficio",
				"tasa de acierto", "sistema de trading", "evaluar",
			},
			"de": {
				"strategie", "handelsstrategie", "robustheit", "überoptimiert", "profitfaktor", "trefferquote", "handelssystem",
				"bewerten",
			},
			"it": {
				"strategia", "strategia di trading", "robustezza", "fattore di profitto", "sistema di trading", "valutare",
			},
			"pt": {
				"estratégia", "estratégia de trading", "robustez", "fator de lucro", "taxa de acerto", "sistema de trading",
				"avaliar",
			},
			"ru": {
				"стратегия", "торговая стратегия", "бэктест", "надёжность", "профит-фактор", "просадка", "оценить стратегию",
			},
		},
		"xau-quote": {
			"en": {
				"gold", "xau", "xauusd", "xau usd", "xau/usd", "bullion", "ounce", "troy ounce", "precious metal",
				"yellow metal", "quote", "price", "price now", "current price", "spot", "spot price", "live price",
				"latest price", "bid", "ask", "bid ask", "bid/ask", "spread", "last price", "tick", "last tick", "trading at",
				"per ounce", "how much is gold", "real time", "realtime", "mt5", "metatrader",
			},
			"fr": {
				"or", "prix de l'or", "cours de l'or", "once d'or", "or jaune", "métal précieux", "prix", "cours", "cotation",
				"prix actuel", "en direct", "temps réel",
			},
			"es": {
				"oro", "precio del oro", "onza de oro", "metal precioso", "precio", "cotización", "precio actual", "en vivo",
				"tiempo real",
			},
			"de": {
				"gold", "goldpreis", "goldkurs", "feinunze", "edelmetall", "preis", "kurs", "aktueller kurs", "live-kurs",
				"echtzeit",
			},
			"it": {
				"oro", "prezzo dell'oro", "oncia d'oro", "metallo prezioso", "prezzo", "quotazione", "prezzo attuale",
				"tempo reale",
			},
			"pt": {
				"ouro", "preço do ouro", "onça de ouro", "metal precioso", "preço", "cotação", "preço atual", "tempo real",
			},
			"ru": {
				"золото", "цена золота", "унция золота", "драгоценный металл", "цена", "котировка", "курс", "текущая цена",
			},
		},
		"xau-bars": {
			"en": {
				"gold", "xau", "xauusd", "xau usd", "xau/usd", "bullion", "ounce", "troy ounce", "precious metal",
				"yellow metal", "bars", "candles", "candlesticks", "candlestick", "ohlc", "ohlcv", "history", "historical",
				"price history", "historical data", "chart", "chart data", "minute bars", "hourly bars", "kline", "klines",
				"time series", "download", "fetch bars", "series", "past prices", "timeframe", "m1", "m5", "m15", "h1", "minute",
				"hour", "hourly",
			},
			"fr": {
				"or", "prix de l'or", "cours de l'or", "once d'or", "or jaune", "métal précieux", "bougies", "chandeliers",
				"barres", "historique", "historique des prix", "données historiques", "graphique",
				"minute", "heure",
			},
			"es": {
				"oro", "precio del oro", "onza de oro", "metal precioso", "velas", "barras", "histórico", "historial de precios",
				"datos históricos", "gráfico",
				"minuto", "hora",
			},
			"de": {
				"gold", "goldpreis", "goldkurs", "feinunze", "edelmetall", "kerzen", "balken", "kursverlauf",
				"historische daten", "chart",
				"minute", "stunde",
			},
			"it": {
				"oro", "prezzo dell'oro", "oncia d'oro", "metallo prezioso", "candele", "barre", "storico", "dati storici",
				"grafico",
				"minuto",
			},
			"pt": {
				"ouro", "preço do ouro", "onça de ouro", "metal precioso", "velas", "barras", "histórico", "dados históricos",
				"gráfico",
				"minuto", "hora",
			},
			"ru": {
				"золото", "цена золота", "унция золота", "драгоценный металл", "свечи", "бары", "история цен",
				"исторические данные", "график", "таймфрейм",
				"минута", "час",
			},
		},
		"xau-market-state": {
			"en": {
				"gold", "xau", "xauusd", "xau usd", "xau/usd", "bullion", "ounce", "troy ounce", "precious metal",
				"yellow metal", "trend", "trending", "volatility", "volatile", "realized volatility", "atr",
				"average true range", "range position", "return", "market state", "market regime", "regime", "conditions",
				"market conditions", "momentum", "slope", "overbought", "oversold", "ranging", "range", "technical analysis",
				"analysis", "up or down", "timeframe", "m1", "m5", "m15", "h1", "minute", "hour", "hourly",
			},
			"fr": {
				"or", "prix de l'or", "cours de l'or", "once d'or", "or jaune", "métal précieux", "tendance", "volatilité",
				"état du marché", "régime de marché", "haussier", "baissier", "analyse technique",
				"minute", "heure",
			},
			"es": {
				"oro", "precio del oro", "onza de oro", "metal precioso", "tendencia", "volatilidad", "estado del mercado",
				"alcista", "bajista", "análisis técnico",
				"minuto", "hora",
			},
			"de": {
				"gold", "goldpreis", "goldkurs", "feinunze", "edelmetall", "trend", "aufwärtstrend", "abwärtstrend",
				"volatilität", "marktlage", "marktzustand",
				"minute", "stunde",
			},
			"it": {
				"oro", "prezzo dell'oro", "oncia d'oro", "metallo prezioso", "tendenza", "volatilità", "stato del mercato",
				"rialzista", "ribassista",
				"minuto",
			},
			"pt": {
				"ouro", "preço do ouro", "onça de ouro", "metal precioso", "tendência", "volatilidade", "estado do mercado",
				"minuto", "hora",
			},
			"ru": {
				"золото", "цена золота", "унция золота", "драгоценный металл", "тренд", "волатильность", "состояние рынка",
				"восходящий тренд", "нисходящий тренд",
				"минута", "час",
			},
		},
		"csv-profile": {
			"en": {
				"csv", "tsv", "comma separated", "comma-separated values", "tab separated", "semicolon", "delimiter",
				"spreadsheet", "excel", "table", "tabular", "columns", "column types", "column statistics", "rows", "header",
				"data profile", "profiling", "profile", "missing values", "nulls", "data quality", "dataset", "data set",
				"infer types", "sheet", "export", "sniff",
			},
			"fr": {
				"fichier csv", "colonnes", "valeurs manquantes", "tableur", "séparateur", "délimiteur", "qualité des données",
				"types de colonnes",
			},
			"es": {
				"archivo csv", "columnas", "valores faltantes", "hoja de cálculo", "delimitador", "separador",
				"calidad de datos",
			},
			"de": {
				"csv-datei", "spalten", "fehlende werte", "tabellenkalkulation", "trennzeichen", "datenqualität", "spaltentypen",
			},
			"it": {
				"file csv", "colonne", "valori mancanti", "foglio di calcolo", "delimitatore",
			},
			"pt": {
				"arquivo csv", "colunas", "valores ausentes", "planilha", "delimitador",
			},
			"ru": {
				"csv файл", "столбцы", "колонки", "пропущенные значения", "разделитель",
			},
		},
		"json-shape": {
			"en": {
				"json", "json structure", "json schema", "schema", "infer schema", "structure", "shape", "keys", "paths",
				"json paths", "jsonpath", "nested", "fields", "properties", "payload", "api response", "response", "document",
				"object", "tree", "depth", "blob",
			},
			"fr": {
				"structure json", "schéma", "chemins", "clés", "imbriqué",
			},
			"es": {
				"estructura", "esquema", "rutas", "claves", "anidado",
			},
			"de": {
				"struktur", "pfade", "schlüssel", "verschachtelt",
			},
			"it": {
				"struttura", "percorsi", "chiavi", "annidato",
			},
			"pt": {
				"estrutura", "esquema", "caminhos", "chaves", "aninhado",
			},
			"ru": {
				"структура", "схема", "ключи", "пути", "вложенный",
			},
		},
		"jwt-decode": {
			"en": {
				"jwt", "json web token", "token", "decode token", "bearer", "bearer token", "authorization header",
				"auth header", "claims", "payload", "exp", "expiry", "expired", "expire", "expiration", "iat", "nbf", "id token",
				"access token", "oauth", "openid", "oidc", "jws", "decode", "decoder", "inspect token", "session token",
			},
			"fr": {
				"jeton", "décoder", "jeton d'accès", "expiré",
			},
			"es": {
				"decodificar", "token de acceso", "expirado", "caducado",
			},
			"de": {
				"dekodieren", "abgelaufen", "zugriffstoken",
			},
			"it": {
				"decodificare", "scaduto",
			},
			"pt": {
				"decodificar", "expirado",
			},
			"ru": {
				"токен", "декодировать", "расшифровать", "истёк",
			},
		},
		"tick-pnl": {
			"en": {
				"futures", "future", "ticks", "tick", "tick value", "tick size", "p&l", "pnl", "profit and loss", "profit",
				"loss", "gain", "contracts", "contract", "es", "nq", "cl", "crude", "crude oil", "emini", "e-mini", "points",
				"trade result", "made", "lose", "lost",
			},
			"fr": {
				"contrats à terme", "contrats", "profit et perte", "gain", "perte", "valeur du tick",
			},
			"es": {
				"futuros", "contratos", "ganancia", "pérdida", "valor del tick",
			},
			"de": {
				"kontrakte", "gewinn", "verlust", "tickwert",
			},
			"it": {
				"contratti", "profitto", "perdita",
			},
			"pt": {
				"futuros", "contratos", "lucro", "prejuízo",
			},
			"ru": {
				"тики", "фьючерсы", "контракты", "прибыль", "убыток",
			},
		},
		"evm-address-syntax": {
			"en": {
				"evm", "ethereum", "eth", "ether", "address", "wallet", "wallet address", "validate wallet", "validate address",
				"ethereum address", "eth address", "addr", "checksum", "eip-55", "eip55", "0x", "hex address", "base wallet",
				"polygon", "arbitrum", "bsc", "recipient", "mixed case", "valid address", "well formed", "format check", "usdc",
			},
			"fr": {
				"adresse", "adresse ethereum", "portefeuille", "adresse de portefeuille", "vérifier", "valide",
				"somme de contrôle",
			},
			"es": {
				"dirección", "dirección ethereum", "billetera", "monedero", "válida", "verificar",
			},
			"de": {
				"adresse", "wallet-adresse", "gültig", "prüfen", "prüfsumme",
			},
			"it": {
				"indirizzo", "portafoglio", "valido", "verificare",
			},
			"pt": {
				"endereço", "carteira", "válido", "verificar",
			},
			"ru": {
				"адрес", "кошелёк", "кошелек", "адрес кошелька", "проверить",
			},
		},
		"ohlcv-state": {
			"en": {
				"ohlc", "ohlcv", "bars", "candles", "candlesticks", "candle data", "atr", "average true range", "true range",
				"range position", "return", "percent return", "statistics", "stats", "summary", "supplied bars", "my bars",
				"my candles", "my data", "own data", "own candles", "own bars", "these bars", "these candles", "given bars",
				"provided bars", "price series", "provide", "paste", "open high low close", "any symbol", "any instrument",
				"stock", "stocks", "bitcoin", "btc", "eurusd", "forex pair", "volatility",
			},
			"fr": {
				"mes bougies", "mes barres", "mes données", "statistiques", "rendement", "bougies", "barres",
			},
			"es": {
				"mis velas", "mis barras", "mis datos", "estadísticas", "rendimiento", "velas", "barras",
			},
			"de": {
				"meine kerzen", "eigene kerzen", "meine daten", "statistik", "rendite", "kerzen",
			},
			"it": {
				"le mie candele", "statistiche", "rendimento", "candele",
			},
			"pt": {
				"minhas velas", "estatísticas", "retorno", "velas",
			},
			"ru": {
				"мои свечи", "статистика", "доходность", "свечи",
			},
		},
		"regex-test": {
			"en": {
				"regex", "regexp", "regular expression", "pattern", "pattern match", "match", "matches", "regex tester",
				"test regex", "capture group", "capture groups", "named groups", "flags", "javascript regex", "js regex",
				"extract", "search text", "text match", "wildcard", "grep",
			},
			"fr": {
				"expression régulière", "motif", "correspondance",
			},
			"es": {
				"expresión regular", "patrón", "coincidencia",
			},
			"de": {
				"regulärer ausdruck", "regulären ausdruck", "muster",
			},
			"it": {
				"espressione regolare", "corrispondenza",
			},
			"pt": {
				"expressão regular", "padrão", "correspondência",
			},
			"ru": {
				"регулярное выражение", "регулярка", "шаблон",
			},
		},
	}
}
