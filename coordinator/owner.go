package coordinator

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
)

// bootSep separates the instance id from the boot nonce in a lease owner;
// instance ids may not contain it.
const bootSep = "#"

// NewBoot returns a fresh boot nonce: 12 hex digits, made once per start
// of the process.
func NewBoot() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b) // never fails (crypto/rand panics instead)
	return hex.EncodeToString(b)
}

// LeaseOwner is the name the Runner of member instanceID takes its account
// leases and action claims under during one boot: "<instance id>#<boot>".
// Two processes started with one instance id (a copy-pasted
// configuration, a restart while the old process still runs) thus never
// share a lease: PostgreSQL gives each account to one of them, under an
// epoch of its own.
func LeaseOwner(instanceID, boot string) string {
	if boot == "" {
		return instanceID
	}
	return instanceID + bootSep + boot
}

// memberOf returns the member id a lease owner belongs to (LeaseOwner's
// instance id; an owner without a boot nonce is the member id itself).
func memberOf(owner string) string {
	id, _, _ := strings.Cut(owner, bootSep)
	return id
}

// CheckInstanceID says whether id can name a process: Consul keys take it
// as one path segment, and lease owners append "#<boot>" to it.
func CheckInstanceID(id string) error {
	if id == "" || strings.ContainsAny(id, "/"+bootSep) {
		return fmt.Errorf("instance id %q must be non-empty and contain neither '/' nor '#'", id)
	}
	return nil
}
