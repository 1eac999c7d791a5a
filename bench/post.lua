-- wrk script: POST the risk-levels example without payment (a 402 answer).
wrk.method = "POST"
wrk.body = '{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}'
wrk.headers["Content-Type"] = "application/json"
