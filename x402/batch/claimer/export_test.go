package claimer

// SetStepHook sets a function called at each step of a claim ("signed":
// logged, not sent; "answered": the facilitator answered, nothing
// recorded; "recorded": recorded done), for the crash tests.
func SetStepHook(c *Claimer, f func(step string)) { c.hook = f }
