package httpserver

// Defaults of the free-route rate limit.
const (
	// DefaultRate is the sustained rate of free requests per client address,
	// per second.
	DefaultRate = 30
	// DefaultBurst is the number of free requests a client address may make
	// at once.
	DefaultBurst = 300
	// DefaultRateClients bounds the client addresses tracked at once; the
	// least recently seen address is forgotten first (it would have a full
	// bucket again by then unless it was busy very recently).
	DefaultRateClients = 16384
)

// Defaults of the rate limit of requests without payment on the paid
// routes. Each one is validated (a 2 MiB body costs tens of MB to check)
// before its 402: a client asking for offers faster than this is slowed
// down, one that pays is not limited by it.
const (
	// DefaultUnpaidRate is the sustained rate of unpaid requests per client
	// address, per second.
	DefaultUnpaidRate = 20
	// DefaultUnpaidBurst is the number of unpaid requests a client address
	// may make at once.
	DefaultUnpaidBurst = 100
)
