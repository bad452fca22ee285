// Package wimthread runs one worker per WIM account owned by this process,
// and the Supervisor that starts, reloads and stops them.
//
// The queue lives in PostgreSQL (vim_wim_actions); a worker's memory is a
// cache. A worker claims due actions of its account with one statement
// (persistence.ClaimActions): the actions of one WAN link strictly in
// order, different links in parallel up to Options.Parallel. An idle
// worker sleeps until woken or until the head of one of its links' queues
// is due (persistence.NextRunAfter ignores actions waiting behind another
// action of their link, which would only wake it for nothing).
//
// # Who holds a claim
//
// A claim is held only while its work runs. Concretely:
//
//   - Taken: by a worker, in one statement, under a name used once
//     ("<owner>#<n>", persistence.ClaimName). The supervisor records the
//     claim (its record is the set of claims its workers run) before
//     anyone can compare that record with the database.
//   - Renewed: every SweepEvery (Lease/3), exactly the claims in the
//     record, by key and name (persistence.ExtendClaims). Nothing is
//     renewed "for the process": a claim that no worker runs any more is
//     never renewed, so it expires within one lease even while the process
//     lives.
//   - Released: with the outcome, in the transaction that writes it, which
//     only lands while the action is still held under the same name
//     (fencing: an outcome of an older claim, of this process or another,
//     is refused as persistence.ErrClaimLost and the action's new holder
//     decides).
//   - When the outcome cannot be written: while the database is away the
//     write is retried, with back-off, for up to one lease (the claim
//     stays in the record and is renewed once the database answers); a
//     batch the database refuses is written outcome by outcome, and an
//     outcome it refuses alone is replaced by actions.Runner.Unrecorded.
//     If nothing could be written, the claim is given up: it leaves the
//     running set (no more renewal), the sweep releases it as soon as the
//     database answers, and otherwise it expires. The action then runs
//     again, which every action is written to survive.
//   - On Stop: workers finish (their running actions see ctx cancelled and
//     come back as "interrupted", due at once), outcomes are written, and
//     every remaining claim of the owner is released.
//   - A process that dies leaves its claims to expire; the sweep of any
//     live process (the cluster leader, once there is one) returns expired
//     claims to the queue.
//
// VerifyClaims checks the invariant that follows: every unexpired claim
// the database holds under this owner is in the record. The worker tests
// run it continuously.
//
// A panic in a connector fails its action (actions.Runner.Run recovers);
// the worker and the process go on.
//
// Wake-ups: the engine sends NOTIFY on the wimro_accounts channel when an
// account, its WIM, its port mappings or its actions change; the Supervisor
// LISTENs and wakes (or reloads) the worker. A poll loop covers a lost
// notification.
//
// Ownership comes from outside: SetAccounts says which accounts this
// process owns (the cluster coordinator will call it); OwnAll makes the
// process own every account, following the account list as it changes.
package wimthread
