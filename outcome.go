package wimro

import "time"

// Outcome is what running one action produced: the runner (package
// actions) computes it without writing anything, and the caller writes it
// (persistence.Store.FinishActions) in one transaction with the WAN link
// and the instance action's counters. It lives here, with Action, so that
// the runner does not depend on the database's types.
type Outcome struct {
	Status        string // the action's new status
	ErrorMsg      *string
	WIMInternalID *string
	Extra         map[string]any
	// RunAfter, when set, keeps the action queued until then (a retry, a
	// wait for local networks, or the next status refresh).
	RunAfter *time.Time
	// ResetAttempts clears the attempt counter (a refresh is not a retry).
	ResetAttempts bool
	// Reached says the run called the controller: the attempt counter
	// grows by one with the outcome (unless ResetAttempts). A run stopped
	// before that, or an outcome refused (ErrClaimLost), counts nothing,
	// so attempts is the number of runs that reached the controller.
	Reached bool
	// Retry marks the outcome of a failed attempt that will run again at
	// RunAfter: it writes a retry event (attempt, ErrorMsg, RunAfter) in
	// the same statement, though the status does not change.
	Retry bool
	// Done and Failed are added to the instance action's counters.
	Done, Failed int
	// Link, when set, updates the WAN link (a missing link is ignored: the
	// instance may be gone).
	Link *LinkUpdate
}

// LinkUpdate names the WAN link columns to change; nil fields are kept and
// WIMInfo is merged into the stored object.
type LinkUpdate struct {
	Status        *string
	ErrorMsg      *string
	ClearError    bool
	WIMInternalID *string
	WIMInfo       map[string]any
}
