package devchain

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"io"
	"math/big"
	"net/http"
	"strings"
	"testing"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"
)

// signed signs a dynamic-fee transaction of key on the chain, at the
// head's base fee times two plus a tip of 1 gwei.
func signed(t *testing.T, ec *ethclient.Client, key *ecdsa.PrivateKey, nonce uint64, to common.Address, gas uint64, data []byte) *types.Transaction {
	t.Helper()
	head, err := ec.HeaderByNumber(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tip := big.NewInt(1_000_000_000)
	tx, err := types.SignTx(types.NewTx(&types.DynamicFeeTx{ChainID: big.NewInt(ChainID), Nonce: nonce, GasTipCap: tip,
		GasFeeCap: new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(2)), tip), Gas: gas, To: &to, Data: data}),
		types.LatestSignerForChainID(big.NewInt(ChainID)), key)
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// A call or an estimate that reverts is a JSON-RPC error of code 3 with
// the reason in the message and the revert data as data; a transaction
// that reverts is mined with a failed receipt that used gas; stale nonces,
// unfunded senders and repeats are refused in go-ethereum's words.
func TestRevertsAndRefusals(t *testing.T) {
	c, r, ec := startChain(t, Config{})
	ctx := context.Background()
	payer := c.Accounts().Payer
	zeroMint, err := c.token.Pack("mint", payer.Address, new(big.Int))
	if err != nil {
		t.Fatal(err)
	}
	msg := ethereum.CallMsg{From: payer.Address, To: &USDC, Data: zeroMint}
	for name, call := range map[string]func() error{
		"eth_call":        func() error { _, err := ec.CallContract(ctx, msg, nil); return err },
		"eth_estimateGas": func() error { _, err := ec.EstimateGas(ctx, msg); return err },
	} {
		err := call()
		var re rpc.Error
		var de rpc.DataError
		if !errors.As(err, &re) || re.ErrorCode() != 3 || !strings.Contains(err.Error(), "execution reverted: FiatToken: mint amount not greater than 0") {
			t.Fatalf("%s: %v, want code 3 with the reason", name, err)
		}
		if !errors.As(err, &de) || !strings.HasPrefix(de.ErrorData().(string), "0x08c379a0") {
			t.Fatalf("%s: data %v, want the Error(string) revert data", name, de)
		}
	}

	nonce, err := ec.PendingNonceAt(ctx, payer.Address)
	if err != nil {
		t.Fatal(err)
	}
	tx := signed(t, ec, payer.Key, nonce, USDC, 100_000, zeroMint)
	if err := ec.SendTransaction(ctx, tx); err != nil {
		t.Fatal(err)
	}
	rc, err := ec.TransactionReceipt(ctx, tx.Hash())
	if err != nil {
		t.Fatal(err)
	}
	if rc.Status != types.ReceiptStatusFailed || rc.GasUsed == 0 || rc.GasUsed >= 100_000 || len(rc.Logs) != 0 {
		t.Fatalf("reverted transaction: status %d, gas used %d, %d logs", rc.Status, rc.GasUsed, len(rc.Logs))
	}
	block, err := ec.BlockByNumber(ctx, rc.BlockNumber)
	if err != nil {
		t.Fatal(err)
	}
	if block.GasUsed() != rc.GasUsed || len(block.Transactions()) != 1 || block.Transactions()[0].Hash() != tx.Hash() || block.BaseFee() == nil {
		t.Fatalf("block %d: gas used %d, %d transactions, base fee %v", block.Number(), block.GasUsed(), len(block.Transactions()), block.BaseFee())
	}
	if err := ec.SendTransaction(ctx, tx); err == nil || !strings.Contains(err.Error(), "already known") {
		t.Fatalf("the same transaction again: %v", err)
	}
	stale := signed(t, ec, payer.Key, nonce, payer.Address, 21_000, nil)
	if err := ec.SendTransaction(ctx, stale); err == nil || !strings.Contains(err.Error(), "nonce too low") {
		t.Fatalf("a used nonce: %v", err)
	}
	broke, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := ec.SendTransaction(ctx, signed(t, ec, broke, 0, payer.Address, 21_000, nil)); err == nil || !strings.Contains(err.Error(), "insufficient funds") {
		t.Fatalf("an unfunded sender: %v", err)
	}
	var code hexutil.Bytes
	if err := r.CallContext(ctx, &code, "eth_getCode", USDC, "pending"); err != nil || len(code) == 0 {
		t.Fatalf("eth_getCode pending: %d bytes, %v", len(code), err)
	}
}

// A transfer is mined with its Transfer log, found by eth_getLogs by
// address and topic over a range and by block hash; the transaction and
// its block are served by hash and number, pending is the head, and the
// fee methods answer from the blocks sealed.
func TestLogsBlocksAndFees(t *testing.T) {
	c, r, ec := startChain(t, Config{})
	ctx := context.Background()
	a := c.Accounts()
	data, err := c.token.Pack("transfer", a.PayTo.Address, big.NewInt(1_234))
	if err != nil {
		t.Fatal(err)
	}
	gas, err := ec.EstimateGas(ctx, ethereum.CallMsg{From: a.Payer.Address, To: &USDC, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	nonce, err := ec.PendingNonceAt(ctx, a.Payer.Address)
	if err != nil {
		t.Fatal(err)
	}
	tx := signed(t, ec, a.Payer.Key, nonce, USDC, gas, data)
	if err := ec.SendTransaction(ctx, tx); err != nil {
		t.Fatal(err)
	}
	rc, err := ec.TransactionReceipt(ctx, tx.Hash())
	if err != nil || rc.Status != types.ReceiptStatusSuccessful || len(rc.Logs) != 1 || rc.EffectiveGasPrice == nil {
		t.Fatalf("receipt %+v, %v", rc, err)
	}
	if bal, _ := c.USDCBalance(ctx, a.PayTo.Address); bal.Int64() != 1_234 {
		t.Fatalf("payTo holds %v", bal)
	}
	transfer := crypto.Keccak256Hash([]byte("Transfer(address,address,uint256)"))
	toTopic := common.BytesToHash(a.PayTo.Address.Bytes())
	logs, err := ec.FilterLogs(ctx, ethereum.FilterQuery{FromBlock: big.NewInt(0), Addresses: []common.Address{USDC}, Topics: [][]common.Hash{{transfer}, nil, {toTopic}}})
	if err != nil || len(logs) != 1 || logs[0].TxHash != tx.Hash() || logs[0].BlockHash != rc.BlockHash {
		t.Fatalf("logs by range: %+v, %v", logs, err)
	}
	byHash, err := ec.FilterLogs(ctx, ethereum.FilterQuery{BlockHash: &rc.BlockHash, Addresses: []common.Address{USDC}})
	if err != nil || len(byHash) != 1 || byHash[0].Index != rc.Logs[0].Index {
		t.Fatalf("logs by block hash: %+v, %v", byHash, err)
	}
	if none, err := ec.FilterLogs(ctx, ethereum.FilterQuery{FromBlock: big.NewInt(0), Addresses: []common.Address{a.Relayer.Address}}); err != nil || len(none) != 0 {
		t.Fatalf("logs of an address with none: %+v, %v", none, err)
	}
	got, pending, err := ec.TransactionByHash(ctx, tx.Hash())
	if err != nil || pending || got.Hash() != tx.Hash() {
		t.Fatalf("transaction by hash: pending %v, %v", pending, err)
	}
	if from, err := ec.TransactionSender(ctx, got, rc.BlockHash, rc.TransactionIndex); err != nil || from != a.Payer.Address {
		t.Fatalf("sender %s, %v", from, err)
	}
	block, err := ec.BlockByHash(ctx, rc.BlockHash)
	if err != nil || block.NumberU64() != rc.BlockNumber.Uint64() || block.Transactions()[0].Hash() != tx.Hash() {
		t.Fatalf("block by hash: %v", err)
	}
	if n, err := ec.TransactionCount(ctx, rc.BlockHash); err != nil || n != 1 {
		t.Fatalf("transactions in the block %d, %v", n, err)
	}
	if in, err := ec.TransactionInBlock(ctx, rc.BlockHash, 0); err != nil || in.Hash() != tx.Hash() {
		t.Fatalf("transaction 0 of the block: %v", err)
	}
	var head, pend map[string]any
	if err := r.CallContext(ctx, &head, "eth_getBlockByNumber", "latest", false); err != nil {
		t.Fatal(err)
	}
	if err := r.CallContext(ctx, &pend, "eth_getBlockByNumber", "pending", false); err != nil || pend["hash"] != head["hash"] {
		t.Fatalf("pending block %v, latest %v: %v", pend["hash"], head["hash"], err)
	}
	if n, err := ec.NonceAt(ctx, a.Payer.Address, nil); err != nil || n != nonce+1 {
		t.Fatalf("nonce after the transfer %d, %v", n, err)
	}
	tip, err := ec.SuggestGasTipCap(ctx)
	if err != nil || tip.Sign() <= 0 {
		t.Fatalf("tip %v, %v", tip, err)
	}
	price, err := ec.SuggestGasPrice(ctx)
	if err != nil || price.Cmp(new(big.Int).Add(tip, block.BaseFee())) < 0 {
		t.Fatalf("gas price %v, %v", price, err)
	}
	fh, err := ec.FeeHistory(ctx, 2, nil, []float64{50})
	if err != nil || len(fh.BaseFee) != 3 || len(fh.Reward) != 2 || len(fh.GasUsedRatio) != 2 || fh.Reward[1][0].Cmp(tx.GasTipCap()) != 0 {
		t.Fatalf("fee history %+v, %v", fh, err)
	}
}

// Transactions sent ahead of their sender's nonce, out of order, wait,
// shown as pending, and are mined right after the one that closes the
// gap.
func TestNonceGapWaits(t *testing.T) {
	c, r, ec := startChain(t, Config{})
	ctx := context.Background()
	relayer := c.Accounts().Relayer
	to := common.HexToAddress("0x00000000000000000000000000000000000000c3")
	nonce, err := ec.PendingNonceAt(ctx, relayer.Address)
	if err != nil {
		t.Fatal(err)
	}
	further := signed(t, ec, relayer.Key, nonce+2, to, 21_000, nil)
	if err := ec.SendTransaction(ctx, further); err != nil {
		t.Fatal(err)
	}
	ahead := signed(t, ec, relayer.Key, nonce+1, to, 21_000, nil)
	if err := ec.SendTransaction(ctx, ahead); err != nil {
		t.Fatal(err)
	}
	if _, pending, err := ec.TransactionByHash(ctx, ahead.Hash()); err != nil || !pending {
		t.Fatalf("the transaction ahead: pending %v, %v", pending, err)
	}
	if _, err := ec.TransactionReceipt(ctx, ahead.Hash()); !errors.Is(err, ethereum.NotFound) {
		t.Fatalf("receipt of the transaction ahead: %v", err)
	}
	var status map[string]hexutil.Uint
	if err := r.CallContext(ctx, &status, "txpool_status"); err != nil || status["queued"] != 2 {
		t.Fatalf("txpool_status %v, %v", status, err)
	}
	first := signed(t, ec, relayer.Key, nonce, to, 21_000, nil)
	if err := ec.SendTransaction(ctx, first); err != nil {
		t.Fatal(err)
	}
	for _, tx := range []*types.Transaction{first, ahead, further} {
		if rc, err := ec.TransactionReceipt(ctx, tx.Hash()); err != nil || rc.Status != types.ReceiptStatusSuccessful {
			t.Fatalf("receipt of nonce %d: %v", tx.Nonce(), err)
		}
	}
	if n, err := ec.PendingNonceAt(ctx, relayer.Address); err != nil || n != nonce+3 {
		t.Fatalf("nonce %d after the three, %v", n, err)
	}
	if err := r.CallContext(ctx, &status, "txpool_status"); err != nil || status["queued"] != 0 {
		t.Fatalf("txpool_status %v, %v", status, err)
	}
}

// A log filter and a block filter report, when polled, what was sealed
// since the last poll; eth_getFilterLogs answers the whole range; an
// uninstalled filter is not found.
func TestFilters(t *testing.T) {
	c, r, ec := startChain(t, Config{})
	ctx := context.Background()
	a := c.Accounts()
	transfer := crypto.Keccak256Hash([]byte("Transfer(address,address,uint256)"))
	var logsID, blocksID string
	if err := r.CallContext(ctx, &logsID, "eth_newFilter", map[string]any{"fromBlock": "0x0", "address": USDC, "topics": []any{transfer}}); err != nil {
		t.Fatal(err)
	}
	if err := r.CallContext(ctx, &blocksID, "eth_newBlockFilter"); err != nil {
		t.Fatal(err)
	}
	data, err := c.token.Pack("transfer", a.PayTo.Address, big.NewInt(7))
	if err != nil {
		t.Fatal(err)
	}
	nonce, err := ec.PendingNonceAt(ctx, a.Payer.Address)
	if err != nil {
		t.Fatal(err)
	}
	gas, err := ec.EstimateGas(ctx, ethereum.CallMsg{From: a.Payer.Address, To: &USDC, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	tx := signed(t, ec, a.Payer.Key, nonce, USDC, gas, data)
	if err := ec.SendTransaction(ctx, tx); err != nil {
		t.Fatal(err)
	}
	rc, err := ec.TransactionReceipt(ctx, tx.Hash())
	if err != nil || rc.Status != types.ReceiptStatusSuccessful || len(rc.Logs) != 1 {
		t.Fatalf("receipt %+v, %v", rc, err)
	}
	var logs []types.Log
	if err := r.CallContext(ctx, &logs, "eth_getFilterChanges", logsID); err != nil || len(logs) != 1 || logs[0].TxHash != tx.Hash() {
		t.Fatalf("log filter changes: %+v, %v", logs, err)
	}
	var hashes []common.Hash
	if err := r.CallContext(ctx, &hashes, "eth_getFilterChanges", blocksID); err != nil || len(hashes) != 1 || hashes[0] != rc.BlockHash {
		t.Fatalf("block filter changes: %v, %v", hashes, err)
	}
	if err := r.CallContext(ctx, &logs, "eth_getFilterChanges", logsID); err != nil || len(logs) != 0 {
		t.Fatalf("log filter changes, polled again: %+v, %v", logs, err)
	}
	// The payer's funding at start and the transfer.
	if err := r.CallContext(ctx, &logs, "eth_getFilterLogs", logsID); err != nil || len(logs) != 2 {
		t.Fatalf("filter logs: %+v, %v", logs, err)
	}
	var ok bool
	if err := r.CallContext(ctx, &ok, "eth_uninstallFilter", logsID); err != nil || !ok {
		t.Fatalf("uninstall: %v, %v", ok, err)
	}
	if err := r.CallContext(ctx, &logs, "eth_getFilterChanges", logsID); err == nil || !strings.Contains(err.Error(), "filter not found") {
		t.Fatalf("an uninstalled filter: %v", err)
	}
}

// eth_call answers at any past block, and with state overrides: code
// given for an empty address runs for that call only.
func TestCallAtBlocksAndOverrides(t *testing.T) {
	c, r, ec := startChain(t, Config{})
	ctx := context.Background()
	payer := c.Accounts().Payer.Address
	data, err := c.token.Pack("balanceOf", payer)
	if err != nil {
		t.Fatal(err)
	}
	msg := ethereum.CallMsg{To: &USDC, Data: data}
	if out, err := ec.CallContract(ctx, msg, big.NewInt(0)); err != nil || new(big.Int).SetBytes(out).Sign() != 0 {
		t.Fatalf("balance at genesis %x, %v", out, err)
	}
	if out, err := ec.CallContract(ctx, msg, nil); err != nil || new(big.Int).SetBytes(out).Int64() != DefaultPayerUSDC {
		t.Fatalf("balance at the head %x, %v", out, err)
	}
	empty := common.HexToAddress("0x00000000000000000000000000000000000000d4")
	answer42 := hexutil.MustDecode("0x602a60005260206000f3") // returns the word 42
	var out hexutil.Bytes
	call := map[string]any{"to": empty}
	if err := r.CallContext(ctx, &out, "eth_call", call, "latest", map[common.Address]any{empty: map[string]any{"code": hexutil.Bytes(answer42)}}); err != nil || new(big.Int).SetBytes(out).Int64() != 42 {
		t.Fatalf("call with a code override: %x, %v", []byte(out), err)
	}
	if err := r.CallContext(ctx, &out, "eth_call", call, "latest"); err != nil || len(out) != 0 {
		t.Fatalf("call without the override: %x, %v", []byte(out), err)
	}
}

// The endpoint answers browsers (CORS preflight from any origin) and
// refuses a request naming a host other than an IP address or localhost.
func TestHTTPOriginsAndHosts(t *testing.T) {
	c, _, _ := startChain(t, Config{PayerUSDC: big.NewInt(0)})
	body := `{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}`
	do := func(method, host, origin string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, c.URL(), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
			req.Header.Set("Access-Control-Request-Method", "POST")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	if res := do(http.MethodOptions, "", "https://app.example"); res.StatusCode != http.StatusNoContent || res.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("preflight: %d, allow origin %q", res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"))
	}
	if res := do(http.MethodPost, "", "https://app.example"); res.StatusCode != http.StatusOK || res.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("call from a page: %d, allow origin %q", res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"))
	}
	if res := do(http.MethodPost, "localhost", ""); res.StatusCode != http.StatusOK {
		t.Fatalf("Host localhost: %d", res.StatusCode)
	}
	if res := do(http.MethodPost, "rebind.example:8545", ""); res.StatusCode != http.StatusForbidden {
		t.Fatalf("Host rebind.example: %d, want 403", res.StatusCode)
	}
}
