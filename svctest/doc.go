// Package svctest holds gopter generators of valid svc requests, so that
// anyone can property-test the tools: a generator per tool request, plus
// OHLCV bar series and CSV documents.
//
// Every generator yields values that pass the tool's validation; properties
// can therefore assert on the response without filtering errors. Use them
// with github.com/leanovate/gopter:
//
//	properties := gopter.NewProperties(nil)
//	properties.Property("stop below entry for longs", prop.ForAll(
//		func(req svc.RiskLevelsRequest) bool { ... },
//		svctest.RiskLevelsRequest(),
//	))
//	properties.TestingRun(t)
package svctest
