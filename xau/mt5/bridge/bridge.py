#!/usr/bin/env python3
"""Read-only HTTP bridge from a MetaTrader 5 terminal to svc.

Implements the contract of README.md (same directory):

    GET /health                              -> terminal state
    GET /quote?symbol=XAUUSD                 -> latest tick
    GET /bars?symbol=XAUUSD&timeframe=M5&count=100 -> last N bars, oldest first

Every request must carry the shared token in the X-Bridge-Token header.
The bridge only reads: it calls mt5.initialize, terminal_info, account_info
(for the server name), symbol_info, symbol_info_tick and copy_rates_from_pos,
never order_send or any other trading function.

Configuration (environment):
    BRIDGE_TOKEN       shared secret, at least 16 characters (required)
    MT5_SERVER_TZ      time zone of the trading server's clock (required):
                       "UTC", a fixed offset "+02:00", "NY+7" (New York time
                       + 7 h: UTC+2 in winter, UTC+3 in US summer time, the
                       common broker convention) or an IANA zone name such as
                       "Europe/Athens" (needs `pip install tzdata` on Windows)
    BRIDGE_SYMBOLS     comma-separated symbols served (default "XAUUSD")
    BRIDGE_ADDR        listen address (default 127.0.0.1)
    BRIDGE_PORT        listen port (default 8765)
    MT5_PATH           path of terminal64.exe, if not the default install
"""

import datetime as dt
import hmac
import json
import logging
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import MetaTrader5 as mt5

MAX_COUNT = 5000
TIMEFRAMES = {
    "M1": mt5.TIMEFRAME_M1,
    "M5": mt5.TIMEFRAME_M5,
    "M15": mt5.TIMEFRAME_M15,
    "H1": mt5.TIMEFRAME_H1,
}
REINIT_INTERVAL = 5.0  # seconds between reconnection attempts

log = logging.getLogger("mt5-bridge")


class BridgeError(Exception):
    """An error answered as JSON {error, code} with an HTTP status."""

    def __init__(self, status, code, message):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class ServerClock:
    """Converts the trading server's wall-clock seconds (what MT5 reports
    as tick and bar times) to UTC."""

    def __init__(self, spec):
        spec = (spec or "").strip()
        if not spec:
            raise ValueError("MT5_SERVER_TZ is required (UTC, +02:00, NY+7 or an IANA zone)")
        self.spec = spec
        self.fixed = None
        self.zone = None
        if spec.upper() == "UTC":
            self.fixed = 0
        elif spec.upper() == "NY+7":
            pass
        elif spec[0] in "+-" and len(spec) == 6 and spec[3] == ":":
            sign = 1 if spec[0] == "+" else -1
            self.fixed = sign * (int(spec[1:3]) * 3600 + int(spec[4:6]) * 60)
        else:
            from zoneinfo import ZoneInfo  # Windows: pip install tzdata

            self.zone = ZoneInfo(spec)

    def to_utc(self, server_seconds):
        """Returns an aware UTC datetime for server wall-clock seconds."""
        naive = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=server_seconds)
        if self.fixed is not None:
            offset = self.fixed
        elif self.zone is not None:
            return naive.replace(tzinfo=self.zone).astimezone(dt.timezone.utc)
        else:  # NY+7: New York local time + 7 h
            offset = 3 * 3600 if _us_dst(naive - dt.timedelta(hours=7)) else 2 * 3600
        return (naive - dt.timedelta(seconds=offset)).replace(tzinfo=dt.timezone.utc)


def _us_dst(ny_local):
    """Whether US daylight saving time is in effect at a New York local time:
    from the second Sunday of March 02:00 to the first Sunday of November 02:00."""
    y = ny_local.year
    march1 = dt.datetime(y, 3, 1)
    start = march1 + dt.timedelta(days=(6 - march1.weekday()) % 7 + 7, hours=2)
    nov1 = dt.datetime(y, 11, 1)
    end = nov1 + dt.timedelta(days=(6 - nov1.weekday()) % 7, hours=2)
    return start <= ny_local < end


def rfc3339(t):
    """Formats an aware UTC datetime as RFC 3339 with millisecond precision."""
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


class Terminal:
    """Serialized, reconnecting, read-only access to the MetaTrader5 package
    (which is not safe for concurrent use)."""

    def __init__(self, clock, symbols, path=None):
        self.clock = clock
        self.symbols = symbols
        self.path = path
        self.lock = threading.Lock()
        self.last_init = 0.0

    def _connected(self):
        info = mt5.terminal_info()
        if info is not None and info.connected:
            return info
        now = time.monotonic()
        if now - self.last_init < REINIT_INTERVAL:
            return None
        self.last_init = now
        mt5.shutdown()
        ok = mt5.initialize(self.path) if self.path else mt5.initialize()
        if not ok:
            log.warning("mt5.initialize failed: %s", mt5.last_error())
            return None
        for s in self.symbols:
            mt5.symbol_select(s, True)  # show in Market Watch so ticks flow
        info = mt5.terminal_info()
        return info if info is not None and info.connected else None

    def _symbol(self, symbol):
        if symbol not in self.symbols:
            raise BridgeError(400, "unknown_symbol", "symbol is not served by this bridge")
        si = mt5.symbol_info(symbol)
        if si is None:
            raise BridgeError(503, "symbol_unavailable", "the terminal does not know this symbol")
        return si

    def health(self):
        with self.lock:
            info = self._connected()
            body = {
                "connected": info is not None,
                "terminal": "MetaTrader 5",
                "server": "",
                "serverTime": rfc3339(dt.datetime.now(dt.timezone.utc)),
                "lastTickTime": None,
            }
            if info is None:
                return body
            body["terminal"] = "MetaTrader 5 build %s" % info.build
            acc = mt5.account_info()
            if acc is not None:
                body["server"] = acc.server
            tick = mt5.symbol_info_tick(self.symbols[0])
            if tick is not None and tick.time_msc > 0:
                body["lastTickTime"] = rfc3339(self.clock.to_utc(tick.time_msc / 1000.0))
            return body

    def quote(self, symbol):
        with self.lock:
            if self._connected() is None:
                raise BridgeError(503, "terminal_disconnected", "terminal is not connected")
            si = self._symbol(symbol)
            tick = mt5.symbol_info_tick(symbol)
            if tick is None or tick.bid <= 0:
                raise BridgeError(503, "no_tick", "the terminal has no tick for this symbol")
            d = si.digits
            bid, ask = round(tick.bid, d), round(tick.ask, d)
            last = round(tick.last, d) if tick.last > 0 else bid
            return {
                "symbol": symbol,
                "bid": bid,
                "ask": ask,
                "last": last,
                "time": rfc3339(self.clock.to_utc(tick.time_msc / 1000.0)),
            }

    def bars(self, symbol, timeframe, count):
        with self.lock:
            if self._connected() is None:
                raise BridgeError(503, "terminal_disconnected", "terminal is not connected")
            si = self._symbol(symbol)
            rates = mt5.copy_rates_from_pos(symbol, TIMEFRAMES[timeframe], 0, count)
            if rates is None:
                raise BridgeError(503, "no_data", "the terminal returned no bars")
            d = si.digits
            bars = [
                {
                    "time": rfc3339(self.clock.to_utc(int(r["time"]))),
                    "open": round(float(r["open"]), d),
                    "high": round(float(r["high"]), d),
                    "low": round(float(r["low"]), d),
                    "close": round(float(r["close"]), d),
                    "tick_volume": int(r["tick_volume"]),
                }
                for r in rates
            ]
            return {"symbol": symbol, "timeframe": timeframe, "bars": bars}


def make_handler(terminal, token):
    token_bytes = token.encode()

    class Handler(BaseHTTPRequestHandler):
        server_version = "mt5-bridge/1"
        sys_version = ""

        def _send(self, status, body):
            data = json.dumps(body, separators=(",", ":")).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Cache-Control", "no-store")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, e):
            self._send(e.status, {"error": e.message, "code": e.code})

        def do_GET(self):
            try:
                given = self.headers.get("X-Bridge-Token", "").encode()
                if not hmac.compare_digest(given, token_bytes):
                    raise BridgeError(401, "unauthorized", "missing or invalid token")
                url = urlsplit(self.path)
                q = {k: v[-1] for k, v in parse_qs(url.query).items()}
                if url.path == "/health":
                    self._send(200, terminal.health())
                elif url.path == "/quote":
                    self._send(200, terminal.quote(q.get("symbol", "")))
                elif url.path == "/bars":
                    tf = q.get("timeframe", "")
                    if tf not in TIMEFRAMES:
                        raise BridgeError(400, "bad_timeframe", "timeframe must be M1, M5, M15 or H1")
                    c = q.get("count", "")
                    if not c.isdigit() or not 1 <= int(c) <= MAX_COUNT:
                        raise BridgeError(400, "bad_count", "count must be 1..%d" % MAX_COUNT)
                    self._send(200, terminal.bars(q.get("symbol", ""), tf, int(c)))
                else:
                    raise BridgeError(404, "not_found", "no such endpoint")
            except BridgeError as e:
                self._error(e)
            except Exception:  # never leak a traceback to the client
                log.exception("request failed")
                self._error(BridgeError(500, "internal", "internal bridge error"))

        def _method_not_allowed(self):
            self.send_response(405)
            self.send_header("Allow", "GET")
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_POST = do_PUT = do_DELETE = do_PATCH = _method_not_allowed

        def log_message(self, fmt, *args):  # the token is never in the request line
            log.info("%s %s", self.address_string(), fmt % args)

    return Handler


def main():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    token = os.environ.get("BRIDGE_TOKEN", "")
    if len(token) < 16:
        sys.exit("BRIDGE_TOKEN must be set to a secret of at least 16 characters")
    try:
        clock = ServerClock(os.environ.get("MT5_SERVER_TZ"))
    except Exception as e:
        sys.exit("MT5_SERVER_TZ: %s" % e)
    symbols = [s.strip() for s in os.environ.get("BRIDGE_SYMBOLS", "XAUUSD").split(",") if s.strip()]
    addr = os.environ.get("BRIDGE_ADDR", "127.0.0.1")
    port = int(os.environ.get("BRIDGE_PORT", "8765"))
    if addr in ("0.0.0.0", "::", ""):
        log.warning("listening on all interfaces: make sure a firewall limits who can reach port %d", port)
    terminal = Terminal(clock, symbols, os.environ.get("MT5_PATH"))
    with terminal.lock:
        if terminal._connected() is None:
            log.warning("terminal not connected yet; will retry on each request")
    server = ThreadingHTTPServer((addr, port), make_handler(terminal, token))
    log.info("mt5 bridge on %s:%d serving %s (server time zone %s)", addr, port, ",".join(symbols), clock.spec)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        mt5.shutdown()


if __name__ == "__main__":
    main()
