// Package mt5 is the xau.Terminal of a real MetaTrader 5 terminal, reached
// through the small HTTP bridge that runs next to it (the contract and the
// reference implementation are in bridge/: README.md and bridge.py).
//
// [New] checks the configuration (an http(s) base URL without credentials,
// a shared token of at least 16 printable characters) and makes no call.
// Every response is decoded strictly and validated with xau.ValidateQuote
// and xau.ValidateBars; bad upstream data, a timeout or a rejected token is
// xau.ErrUnavailable, never data passed on. Values carry xau.SourceMT5.
package mt5
