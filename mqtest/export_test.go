package mqtest

// Validate exposes the configuration check to the external tests.
func Validate(cfg Config) error {
	if cfg.Role == "" {
		cfg.Role = AsyncMaster
	}
	return validate(cfg)
}
