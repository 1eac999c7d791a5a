package onchain

import (
	"context"
	"errors"
	"fmt"
	"math/big"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/internal/clip"
	"github.com/seed1284c1d2/svc/x402/internal/evmaddr"
)

// StatusConfig configures NewStatusReader. RPCURL (or Client) and Network
// are required.
type StatusConfig struct {
	// RPCURL is the chain's JSON-RPC endpoint (http, https, ws or wss).
	// Only read methods are called: no key is needed.
	RPCURL string
	// Client, when set, is used instead of dialing RPCURL.
	Client *rpc.Client
	// Network is the CAIP-2 id (or v1 name) of the chain; the endpoint's
	// chain id must be its.
	Network string
	// Token is the EIP-3009 token contract; empty means the network's
	// USDC.
	Token string
	// Confirmations is the number of blocks (the transaction's included)
	// a transaction must have to count as proof; zero means
	// DefaultConfirmations.
	Confirmations uint64
	// LookbackBlocks bounds how far back the transaction that used an
	// authorization is searched for; zero means DefaultLookbackBlocks.
	// LogWindow is the block range of one eth_getLogs; zero means
	// DefaultLogWindow.
	LookbackBlocks, LogWindow uint64
}

// StatusReader answers what the chain says of an authorization
// (x402.StatusChecker) from a read-only RPC endpoint: no relayer key, no
// transaction. A payment engine settling through a facilitator that does
// not deduplicate asks it to resolve a settlement interrupted by a crash.
// Facilitator.Status is the same reader. Safe for concurrent use.
type StatusReader struct {
	network       x402.Network
	token         common.Address
	rpc           *rpc.Client
	client        *ethclient.Client
	abi           abi.ABI
	confirmations uint64
	lookback      uint64
	window        uint64
}

var _ x402.StatusChecker = (*StatusReader)(nil)

// NewStatusReader connects to the chain and checks it: the endpoint's
// chain id must be the network's, and the token must be a contract there.
// Configuration mistakes are *x402.ConfigError.
func NewStatusReader(ctx context.Context, cfg StatusConfig) (*StatusReader, error) {
	c, err := connect(ctx, cfg.RPCURL, cfg.Client, cfg.Network, cfg.Token)
	if err != nil {
		return nil, err
	}
	return c.reader(cfg.Confirmations, cfg.LookbackBlocks, cfg.LogWindow), nil
}

// chainConn is an RPC endpoint checked to serve a network and its token.
type chainConn struct {
	network x402.Network
	token   common.Address
	chainID *big.Int
	rpc     *rpc.Client
	client  *ethclient.Client
	abi     abi.ABI
}

// connect dials rpcURL (unless rc is given) and checks that it serves
// network's chain and that token (empty: the network's USDC) is a
// contract there.
func connect(ctx context.Context, rpcURL string, rc *rpc.Client, network, token string) (*chainConn, error) {
	n, ok := x402.LookupNetwork(network)
	if !ok {
		return nil, &x402.ConfigError{Field: "Network", Message: fmt.Sprintf("unknown network %q", clip.Bytes(network, 40))}
	}
	tok := common.HexToAddress(n.USDC)
	if token != "" {
		a, ok := evmaddr.Parse(token)
		if !ok {
			return nil, &x402.ConfigError{Field: "Token", Message: "must be 0x followed by 40 hex digits"}
		}
		tok = a
	}
	parsed, err := parseTokenABI()
	if err != nil {
		return nil, fmt.Errorf("x402 onchain: token ABI: %w", err)
	}
	if rc == nil {
		if rpcURL == "" {
			return nil, &x402.ConfigError{Field: "RPCURL", Message: "an RPC endpoint is required"}
		}
		rc, err = rpc.DialContext(ctx, rpcURL)
		if err != nil {
			return nil, fmt.Errorf("x402 onchain: connect to the RPC endpoint: %w", err)
		}
	}
	client := ethclient.NewClient(rc)
	id, err := client.ChainID(ctx)
	if err != nil {
		return nil, fmt.Errorf("x402 onchain: read the chain id: %w", err)
	}
	if id.Int64() != n.ChainID {
		return nil, &x402.ConfigError{Field: "RPCURL", Message: fmt.Sprintf("the endpoint serves chain id %s, not %s's %d", id, n.CAIP2, n.ChainID)}
	}
	code, err := client.CodeAt(ctx, tok, nil)
	if err != nil {
		return nil, fmt.Errorf("x402 onchain: read the token contract: %w", err)
	}
	if len(code) == 0 {
		return nil, &x402.ConfigError{Field: "Token", Message: fmt.Sprintf("no contract at %s on %s", tok.Hex(), n.CAIP2)}
	}
	return &chainConn{network: n, token: tok, chainID: id, rpc: rc, client: client, abi: parsed}, nil
}

// reader is the StatusReader of c, with the defaults for zero values.
func (c *chainConn) reader(confirmations, lookback, window uint64) *StatusReader {
	if confirmations == 0 {
		confirmations = DefaultConfirmations
	}
	if lookback == 0 {
		lookback = DefaultLookbackBlocks
	}
	if window == 0 {
		window = DefaultLogWindow
	}
	return &StatusReader{network: c.network, token: c.token, rpc: c.rpc, client: c.client, abi: c.abi,
		confirmations: confirmations, lookback: lookback, window: window}
}

// Network returns the CAIP-2 id of the chain read.
func (r *StatusReader) Network() string { return r.network.CAIP2 }

// Status implements x402.StatusChecker from the chain:
// authorizationState(from, nonce) and, when used, the transaction that
// emitted AuthorizationUsed(from, nonce) (searched within LookbackBlocks)
// and the Transfer it made. Expired compares validBefore with the latest
// block's time. A canceled authorization is Used without a Transaction.
// A transaction short of its confirmations is an error wrapping
// ErrNotConfirmed (not proof yet; ask again later). Requirements of
// another network or asset are an error: this chain cannot tell.
func (r *StatusReader) Status(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.AuthorizationStatus, error) {
	if n, ok := x402.LookupNetwork(req.Network); !ok || n.CAIP2 != r.network.CAIP2 {
		return x402.AuthorizationStatus{}, fmt.Errorf("x402 onchain: status: network %q is not the chain read (%s)", clip.Bytes(req.Network, 40), r.network.CAIP2)
	}
	if a, ok := evmaddr.Parse(req.Asset); !ok || a != r.token {
		return x402.AuthorizationStatus{}, fmt.Errorf("x402 onchain: status: asset %q is not the token read (%s)", clip.Bytes(req.Asset, 44), r.token.Hex())
	}
	p, err := exact.ParseExactEVMPayload(payload.Payload)
	if err != nil {
		return x402.AuthorizationStatus{}, fmt.Errorf("x402 onchain: status: %w", err)
	}
	a := p.Authorization
	from, ok1 := evmaddr.Parse(a.From)
	var nonce [32]byte
	ok2 := evmaddr.DecodeHex(nonce[:], a.Nonce)
	vb, ok3 := new(big.Int).SetString(a.ValidBefore, 10)
	if !ok1 || !ok2 || !ok3 {
		return x402.AuthorizationStatus{}, errors.New("x402 onchain: status: the authorization's from, nonce or validBefore is malformed")
	}
	st, confirmed, err := r.status(ctx, from, nonce, vb)
	if err != nil {
		return x402.AuthorizationStatus{}, err
	}
	if !confirmed {
		return x402.AuthorizationStatus{}, fmt.Errorf("%w: %s (%d wanted)", ErrNotConfirmed, st.Transaction, r.confirmations)
	}
	return st, nil
}

// ErrNotConfirmed is wrapped by the error of Status when the transaction
// that used the authorization is mined but does not have its
// confirmations yet: ask again later.
var ErrNotConfirmed = errors.New("x402 onchain: the transaction that used the authorization is not confirmed yet")

// status reads what the chain says of the authorization (from, nonce)
// valid before validBefore; confirmed is false when the transaction that
// used it lacks its confirmations.
func (r *StatusReader) status(ctx context.Context, from common.Address, nonce [32]byte, validBefore *big.Int) (st x402.AuthorizationStatus, confirmed bool, err error) {
	// The block that proves expiry is read before the authorization's
	// state: unused after a block at or past validBefore, it can never be
	// used. Read the other way round, a transfer mined between the two
	// reads would be reported unused and expired.
	head, err := r.client.HeaderByNumber(ctx, nil)
	if err != nil {
		return st, false, fmt.Errorf("x402 onchain: status: read the latest block: %w", err)
	}
	used, err := r.used(ctx, from, nonce)
	if err != nil {
		return st, false, err
	}
	st = x402.AuthorizationStatus{Used: used, Expired: validBefore.Cmp(new(big.Int).SetUint64(head.Time)) <= 0}
	if !used {
		return st, true, nil
	}
	// Used: search its events up to the block that says so, or later.
	if head, err = r.client.HeaderByNumber(ctx, nil); err != nil {
		return x402.AuthorizationStatus{}, false, fmt.Errorf("x402 onchain: status: read the latest block: %w", err)
	}
	logs, err := r.findLogs(ctx, head.Number.Uint64(), from, nonce)
	if err != nil {
		return x402.AuthorizationStatus{}, false, err
	}
	for _, l := range logs {
		if l.Removed || l.Topics[0] != topicAuthorizationUsed {
			continue
		}
		rcpt, err := r.client.TransactionReceipt(ctx, l.TxHash)
		if err != nil {
			return x402.AuthorizationStatus{}, false, fmt.Errorf("x402 onchain: status: receipt of %s: %w", l.TxHash.Hex(), err)
		}
		tr, ok := transferOf(rcpt.Logs, r.token, from, nonce)
		if !ok {
			continue
		}
		st.Transaction = l.TxHash.Hex()
		st.Payer, st.PayTo, st.Amount = from.Hex(), tr.to.Hex(), tr.value.String()
		st.Asset, st.Network = r.token.Hex(), r.network.CAIP2
		if confirmed, err = r.confirmed(ctx, rcpt); err != nil {
			return x402.AuthorizationStatus{}, false, err
		}
		return st, confirmed, nil
	}
	return st, true, nil
}

// used reads the token's authorizationState(from, nonce) at the latest
// block.
func (r *StatusReader) used(ctx context.Context, from common.Address, nonce [32]byte) (bool, error) {
	data, err := r.abi.Pack("authorizationState", from, nonce)
	if err != nil {
		return false, err
	}
	var out hexutil.Bytes
	if err := r.rpc.CallContext(ctx, &out, "eth_call", callArg{To: r.token, Data: data}, "latest"); err != nil {
		return false, fmt.Errorf("x402 onchain: status: read the authorization state: %w", err)
	}
	if len(out) != 32 {
		return false, fmt.Errorf("x402 onchain: the token at %s does not answer authorizationState (is it an EIP-3009 token?)", r.token.Hex())
	}
	return out[31] != 0, nil
}

// findLogs searches backwards from head, LogWindow blocks at a time, for
// the token's AuthorizationUsed or AuthorizationCanceled of (from, nonce).
func (r *StatusReader) findLogs(ctx context.Context, head uint64, from common.Address, nonce [32]byte) ([]types.Log, error) {
	var oldest uint64
	if head > r.lookback {
		oldest = head - r.lookback
	}
	topics := [][]common.Hash{{topicAuthorizationUsed, topicAuthorizationCanceled}, {common.BytesToHash(from.Bytes())}, {common.Hash(nonce)}}
	to := head
	for {
		lo := oldest
		if to-oldest >= r.window {
			lo = to - r.window + 1
		}
		logs, err := r.client.FilterLogs(ctx, ethereum.FilterQuery{FromBlock: new(big.Int).SetUint64(lo), ToBlock: new(big.Int).SetUint64(to), Addresses: []common.Address{r.token}, Topics: topics})
		if err != nil {
			return nil, fmt.Errorf("x402 onchain: status: search the authorization's events: %w", err)
		}
		if len(logs) > 0 {
			return logs, nil
		}
		if lo == oldest {
			return nil, nil
		}
		to = lo - 1
	}
}

// confirmed reports whether rcpt's block has its confirmations (it is the
// chain's block at its height, and the head is confirmations-1 blocks
// above it). Only the context's error is returned: a failed read counts
// as not confirmed yet.
func (r *StatusReader) confirmed(ctx context.Context, rcpt *types.Receipt) (bool, error) {
	if r.confirmations <= 1 {
		return true, nil
	}
	head, err := r.client.BlockNumber(ctx)
	if err != nil || head < rcpt.BlockNumber.Uint64()+r.confirmations-1 {
		return false, ctx.Err()
	}
	h, err := r.client.HeaderByNumber(ctx, rcpt.BlockNumber)
	if err != nil {
		return false, ctx.Err()
	}
	return h.Hash() == rcpt.BlockHash, nil
}
