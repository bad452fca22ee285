package connectors

// ValidateL3Site checks one L3VPN site by the rules ValidatePoints applies
// to a point's L3: the engine refuses a bad site when the instance is
// written, with the same words a connector would use when it is run.
func ValidateL3Site(s *L3Site) error { return validateL3(s) }
