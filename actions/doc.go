// Package actions says what CREATE, EDIT and DELETE do to a WAN link,
// step by step. A Runner runs one claimed action against the account's connector
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
//	EDIT    SCHEDULED --link gone (instance deleted first)--> SUPERSEDED (done+1; the DELETE behind removes the service)
//	        SCHEDULED --local nets pending / broken, no exit port or mapping, a type or QoS not declared--> as CREATE
//	        SCHEDULED --Edit declared: edited in place to the link's state, status read at once--> DONE or BUILD
//	              as a CREATE's (done+1; the service id kept, its conn_info updated; an id the controller does not
//	              know: made, or adopted by its key, as a CREATE does)
//	        SCHEDULED --not declared, the link's state unchanged since the service was made--> DONE (done+1; nothing asked)
//	        SCHEDULED --not declared, MakeBeforeBreak: the new service made (key ReplaceKey)--> BUILD (link BUILD with
//	              the new id and a message saying the old one is deleted next; due at once)
//	        SCHEDULED --not declared, break-before-make: the old service deleted--> BUILD (link BUILD, a message saying the
//	              new one is made next; due at once)
//	        SCHEDULED --link has no service yet (its CREATE failed)--> made as a CREATE makes it
//	        SCHEDULED --retryable error--> SCHEDULED (as CREATE); --permanent error--> FAILED (link ERROR; failed+1)
//	        BUILD (replace half done) --make-before-break: the old service deleted, the new one's status read--> DONE or
//	              BUILD as a CREATE's (done+1)
//	        BUILD (replace half done) --break-before-make: the new service made, its status read--> DONE or BUILD (done+1)
//	        BUILD (replace half done) --link gone--> SUPERSEDED (done+1), after deleting what the replace made and the old service
//	        BUILD (replace half done) --retryable error--> BUILD (backoff capped at RetryMax, for ever, as a DELETE: a
//	              replace given up would leave two services, or none)
//	        BUILD (edited, the controller still building) --> as a CREATE's BUILD
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
// looks the service up by that key (the link's service key: an EDIT may
// have replaced the service by one of another key) before deciding nothing
// exists. An EDIT in place sends the link's whole state, which a connector
// applies again without harm; a replace's new service has a key derived
// from the link and the EDIT (ReplaceKey), so a re-run of either half
// adopts what the first made or deletes what is already gone, and a crash
// between the halves leaves exactly one service once the EDIT has run.
//
// The engine queues an EDIT in the transaction that changes where or how
// a link reaches a network (encapsulation, VLAN, PoP port, the vim_info
// its datacenter's rules match): one per link, none when the link's
// unclaimed SCHEDULED CREATE or EDIT will read the change anyway, so that
// several changes before a run are one edit to the latest state. The
// EDIT runs in the link's queue: behind a running CREATE it waits, and a
// DELETE queued after it finds it done or SUPERSEDED.
package actions
