// Compiles the test contracts with the pinned solc (npm "solc") and writes
// the artifacts the Go tests install on anvil: for each contract its
// runtime bytecode, ABI, and the compiler version and settings.
//
//   node compile.mjs [outDir]     (default: ../../internal/anviltest)
//
// contracts/NAME.sol → the file named in `contracts` below (TestUSDC →
// testusdc.json, x402BatchSettlement → batchsettlement.json, ...). The
// output is deterministic: the same source and
// compiler give the same bytes (the metadata hash is left out of the
// bytecode).
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import solc from 'solc'

const here = dirname(fileURLToPath(import.meta.url))
const outDir = process.argv[2] ?? join(here, '..', '..', 'internal', 'anviltest')
const contracts = {
  TestUSDC: 'testusdc.json',
  TestWallet: 'testwallet.json',
  TestFeeUSDC: 'testfeeusdc.json',
  x402BatchSettlement: 'batchsettlement.json',
  ERC3009DepositCollector: 'erc3009collector.json',
  Multicall3: 'multicall3.json',
}
const base = {
  optimizer: { enabled: true, runs: 10000 },
  evmVersion: 'cancun',
  metadata: { bytecodeHash: 'none', appendCBOR: false },
}
for (const [name, out] of Object.entries(contracts)) {
  const file = name + '.sol'
  const input = {
    language: 'Solidity',
    sources: { [file]: { content: readFileSync(join(here, 'contracts', file), 'utf8') } },
    settings: { ...base, outputSelection: { [file]: { [name]: ['abi', 'evm.deployedBytecode.object'] } } },
  }
  // Imports are other files of contracts/.
  const findImports = (path) => ({ contents: readFileSync(join(here, 'contracts', path), 'utf8') })
  const result = JSON.parse(solc.compile(JSON.stringify(input), { import: findImports }))
  const errors = (result.errors ?? []).filter((e) => e.severity === 'error')
  if (errors.length > 0) {
    for (const e of errors) console.error(e.formattedMessage)
    process.exit(1)
  }
  const c = result.contracts[file][name]
  const artifact = {
    contract: name,
    source: 'e2e/chain/contracts/' + file,
    compiler: solc.version(),
    settings: base,
    runtimeBytecode: '0x' + c.evm.deployedBytecode.object,
    abi: c.abi,
  }
  writeFileSync(join(outDir, out), JSON.stringify(artifact, null, 2) + '\n')
}
