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
