// Package actions says what CREATE and DELETE do to a WAN link, step by
// step. A Runner runs one claimed action against the account's connector
// and returns the Outcome; wimthread's completer writes it in one
// transaction with the outcomes of other actions (action status, WAN link,
// instance-action counters). The runner never writes and
// never holds a claim: who holds one, and for how long, is wimthread's
// (see its doc.go).
//
// The state machine of an action (vim_wim_actions.status); every row has a
// case in TestStateMachine:
//
//	CREATE  SCHEDULED --local nets pending--> SCHEDULED (run_after = now+Wait; FAILED after WaitTimeout and > WaitMin checks)
//	        SCHEDULED --local net broken / no exit port / no port mapping / multipoint / permanent error
//	              / a service id that is not storable text--> FAILED (link ERROR; failed+1)
//	        SCHEDULED --retryable controller error--> SCHEDULED (retry event; capped exponential backoff; FAILED after MaxAttempts)
//	        SCHEDULED --process stopping--> SCHEDULED (due at once: it was interrupted, not refused)
//	        SCHEDULED --service created or adopted, then its status read at once in the same run:
//	              ACTIVE/DOWN/ERROR--> DONE (link status and message copied + service id; done+1)
//	              BUILD/INACTIVE--> BUILD (link status copied + service id; done+1; refresh after Refresh)
//	              no answer (error, panic, process stopping)--> BUILD (link BUILD + service id; done+1; refresh after Refresh)
//	        SCHEDULED --link gone (instance deleted first)--> SUPERSEDED (done+1, so the instance action completes)
//	        SCHEDULED --connector panics--> FAILED (link ERROR; failed+1; stack logged at ERROR; never retried)
//	        BUILD --controller says BUILD/INACTIVE--> BUILD (link status copied; refresh again after Refresh)
//	        BUILD --controller says ACTIVE/DOWN/ERROR--> DONE (link status and message copied)
//	        BUILD --status call fails, whatever the error--> BUILD (link WIM_ERROR + message; polled again after
//	              min(backoff, Refresh): polling never stops while the link is BUILD, and a good answer overwrites it)
//	        BUILD --link gone (a DELETE is queued behind it)--> SUPERSEDED
//	DELETE  SCHEDULED --deleted, already gone, or nothing was created--> DONE (link DELETED if the row exists; done+1)
//	        SCHEDULED --retryable error--> SCHEDULED (retry event; backoff capped at RetryMax, for ever: the instance is
//	              gone, so a DELETE given up would leave its service on the controller for good; from MaxAttempts on
//	              it is counted in wimro_delete_retries_past_max_total and logged at WARN every MaxAttempts attempts)
//	        SCHEDULED --permanent error--> FAILED (failed+1)
//	        SCHEDULED --process stopping--> SCHEDULED (due at once)
//	any other (action, status) --> FAILED ("not defined")
//
// Two transitions are an operator's, never a run's (engine/override.go;
// not the Runner's, so TestStateMachine has no case for them). Each is
// written with its audit record and an event, counts failed+1, and is
// refused while the action is claimed (a run is in flight):
//
//	CREATE  SCHEDULED --cancel: attempts 0, no service id--> CANCELLED (link ERROR "its CREATE was cancelled by ...")
//	DELETE  SCHEDULED --cancel: attempts 0, no CREATE of the link reached the controller--> CANCELLED
//	DELETE  SCHEDULED --abandon with force--> ABANDONED (link DELETED if the row exists; the service recorded
//	              as abandoned in action_overrides: reconcile lists it as a known leftover)
//
// Attempts (vim_wim_actions.attempts) count the runs that reached the
// controller: the outcome of such a run adds one (Outcome.Reached) in the
// statement that writes it. A claim adds nothing, so a run stopped before
// its first connector call and an outcome refused because the claim or the
// lease was lost leave the count as it was; so does a run whose process
// died (its claim expires and is swept).
//
// An outcome the database refuses (it cannot happen for text: every text is
// cleaned before it is written) is replaced by Unrecorded: the status is
// kept, the reason recorded, and the action runs again after a back-off.
//
// Every step is safe to run twice: CREATE passes a key derived from the
// WAN link, so a re-run after a crash adopts the service it already made;
// DELETE treats "not found" as done and, when no service id was recorded,
// looks the service up by that key before deciding nothing exists.
package actions
