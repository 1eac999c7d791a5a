-- wrk script: POST the risk-levels example with a fresh pre-signed payment
-- per request (PAYMENTS_FILE: one PAYMENT-SIGNATURE value a line, written by
-- `svcbench sign`). Run wrk with one thread (-t1) so that no payment is used
-- twice; once they run out, requests go unpaid (402, counted as non-2xx).
local payments = {}
for line in io.lines(os.getenv("PAYMENTS_FILE")) do
  payments[#payments + 1] = line
end
local i = 0
local body = '{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}'
request = function()
  i = i + 1
  local headers = { ["Content-Type"] = "application/json" }
  if payments[i] then
    headers["PAYMENT-SIGNATURE"] = payments[i]
  end
  return wrk.format("POST", nil, headers, body)
end
