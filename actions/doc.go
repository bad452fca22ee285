// Package actions says what CREATE, DELETE and FIND do to a WAN link, step
// by step. A Runner runs one claimed action against the account's
// connector and returns the Outcome; the worker writes it in one
// transaction (action status, WAN link, instance-action counters).
//
// The state machine of an action (vim_wim_actions.status):
//
//	CREATE  SCHEDULED --local nets pending--> SCHEDULED (run_after = now+wait; fails after 1 h and >10 waits)
//	        SCHEDULED --local net broken / no exit port / no port mapping / multipoint / permanent error--> FAILED (link ERROR; failed+1)
//	        SCHEDULED --retryable controller error--> SCHEDULED (capped exponential backoff; FAILED after MaxAttempts)
//	        SCHEDULED --service created or adopted--> BUILD (link BUILD + service id; done+1; refresh soon)
//	        SCHEDULED --link gone (instance deleted first)--> SUPERSEDED (done+1, so the instance action completes)
//	        BUILD --controller says BUILD/INACTIVE--> BUILD (refresh again)
//	        BUILD --controller says ACTIVE/DOWN/ERROR--> DONE (link status copied)
//	        BUILD --link gone (a DELETE is queued behind it)--> SUPERSEDED
//	DELETE  SCHEDULED --deleted, already gone, or nothing was created--> DONE (done+1)
//	        SCHEDULED --retryable error--> SCHEDULED (backoff) ; --permanent error--> FAILED (failed+1)
//	FIND    SCHEDULED --service found by key or id--> BUILD (done+1) ; --not found--> FAILED
//
// Every step is safe to run twice: CREATE passes a key derived from the
// WAN link, so a re-run after a crash adopts the service it already made;
// DELETE treats "not found" as done and, when no service id was recorded,
// looks the service up by that key before deciding nothing exists.
package actions
