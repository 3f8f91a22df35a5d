package route

import "errors"

// Sentinel errors of the route package; compare with errors.Is.
var (
	// ErrMalformed marks every body (route, cluster info, registration, KV table) that cannot be
	// decoded. The wrapping error says what was wrong.
	ErrMalformed = errors.New("route: malformed body")
	// ErrChecksum is a REGISTER_BROKER body whose CRC32 does not match the header's bodyCrc32.
	ErrChecksum = errors.New("route: crc32 not match")
)
