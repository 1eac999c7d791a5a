// Compiles contracts/TestUSDC.sol with the pinned solc (npm "solc") and
// writes the artifact the Go tests install on anvil: the runtime bytecode,
// the ABI, and the compiler version and settings.
//
//   node compile.mjs [out.json]     (default: ../../internal/anviltest/testusdc.json)
//
// The output is deterministic: the same source and compiler give the same
// bytes (the metadata hash is left out of the bytecode).
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import solc from 'solc'

const here = dirname(fileURLToPath(import.meta.url))
const out = process.argv[2] ?? join(here, '..', '..', 'internal', 'anviltest', 'testusdc.json')
const file = 'TestUSDC.sol'
const settings = {
  optimizer: { enabled: true, runs: 10000 },
  evmVersion: 'cancun',
  metadata: { bytecodeHash: 'none', appendCBOR: false },
  outputSelection: { [file]: { TestUSDC: ['abi', 'evm.deployedBytecode.object'] } },
}
const input = {
  language: 'Solidity',
  sources: { [file]: { content: readFileSync(join(here, 'contracts', file), 'utf8') } },
  settings,
}
const result = JSON.parse(solc.compile(JSON.stringify(input)))
const errors = (result.errors ?? []).filter((e) => e.severity === 'error')
if (errors.length > 0) {
  for (const e of errors) console.error(e.formattedMessage)
  process.exit(1)
}
const c = result.contracts[file].TestUSDC
const artifact = {
  contract: 'TestUSDC',
  source: 'e2e/chain/contracts/' + file,
  compiler: solc.version(),
  settings: { optimizer: settings.optimizer, evmVersion: settings.evmVersion, metadata: settings.metadata },
  runtimeBytecode: '0x' + c.evm.deployedBytecode.object,
  abi: c.abi,
}
writeFileSync(out, JSON.stringify(artifact, null, 2) + '\n')
