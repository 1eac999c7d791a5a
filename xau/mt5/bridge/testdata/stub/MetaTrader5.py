"""Stub of the MetaTrader5 package for testing bridge.py without a terminal.

Only the read-only functions bridge.py uses exist. The terminal's server
clock runs at UTC+2 (run the bridge with MT5_SERVER_TZ=+02:00). Prices are
deterministic functions of the bar open time with float noise, so the
bridge's rounding to the symbol's digits is exercised.
"""

import time
from collections import namedtuple

TIMEFRAME_M1, TIMEFRAME_M5, TIMEFRAME_M15, TIMEFRAME_H1 = 1, 5, 15, 16385
_SECONDS = {TIMEFRAME_M1: 60, TIMEFRAME_M5: 300, TIMEFRAME_M15: 900, TIMEFRAME_H1: 3600}
_OFFSET = 2 * 3600
_SYMBOLS = {"XAUUSD": 2}

TerminalInfo = namedtuple("TerminalInfo", "connected build name")
AccountInfo = namedtuple("AccountInfo", "server")
SymbolInfo = namedtuple("SymbolInfo", "name digits")
Tick = namedtuple("Tick", "time bid ask last volume time_msc")

_state = {"init": False}


def initialize(path=None):
    _state["init"] = True
    return True


def shutdown():
    _state["init"] = False


def last_error():
    return (1, "Success")


def terminal_info():
    if not _state["init"]:
        return None
    return TerminalInfo(True, 4755, "MetaTrader 5")


def account_info():
    return AccountInfo("Stub-Server")


def symbol_select(symbol, enable=True):
    return symbol in _SYMBOLS


def symbol_info(symbol):
    d = _SYMBOLS.get(symbol)
    return None if d is None else SymbolInfo(symbol, d)


def _price(t):
    return 2650 + (t // 60 % 97) * 0.1 + 1e-9


def symbol_info_tick(symbol):
    if symbol not in _SYMBOLS:
        return None
    now_ms = int(time.time() * 1000) - 1500 + _OFFSET * 1000
    bid = _price(now_ms // 1000)
    return Tick(now_ms // 1000, bid, bid + 0.23000000001, 0.0, 0, now_ms)


def copy_rates_from_pos(symbol, timeframe, start, count):
    if symbol not in _SYMBOLS:
        return None
    tfs = _SECONDS[timeframe]
    now_s = int(time.time()) + _OFFSET
    last_open = now_s - now_s % tfs
    rates = []
    for i in range(count):
        t = last_open - (count - 1 - start - i) * tfs
        p = _price(t)
        rates.append({"time": t, "open": p, "high": p + 0.5, "low": p - 0.5, "close": p + 0.2,
                      "tick_volume": 10 + i, "spread": 25, "real_volume": 0})
    return rates
