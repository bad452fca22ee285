// Package wimthread runs the actions of the WIM accounts this process
// owns, and the Supervisor that takes, keeps and gives back their leases.
//
// The queue lives in PostgreSQL (vim_wim_actions); the process's memory
// is a cache. The shape is a producer and a completer, as in River:
//
//   - One claimer per process (the claimer part) claims due
//     actions of every account whose lease the process holds, in one
//     statement (persistence.ClaimDue): the actions of one WAN link
//     strictly in order, different links in parallel up to
//     Options.Parallel per account, at most a fixed number per claim. The
//     same round trip reads what each action needs (its WAN link, the
//     networks of the link's group and their datacenters) and when the
//     next queued action becomes due, so computing connection points is
//     pure code (actions.ConnectionPoints) and no second statement asks
//     when to wake up. The claimer sleeps until woken: an account's
//     notification, a freed slot, the next due time, or the poll fallback;
//     and it leaves at least claimGap (2 ms) between two claims, so slots
//     freed together are refilled by one claim. Before starting what it
//     claimed, it builds the connectors the accounts lack from one read
//     (persistence.ConnectorInputs). It claims on a pool connection of
//     its own, kept between claims (persistence.Pinned), so the backend
//     that plans the claim has its caches warm.
//   - Each claimed action runs in its own goroutine, with its account's
//     connector. Options.Parallel bounds the actions of an account at the
//     controller: an action whose outcome waits for the completer frees
//     its slot for another link; its own link stays busy until the
//     outcome is written.
//   - One completer per process writes the outcomes of every account in
//     batches: whatever has accumulated, up to a fixed size, in one
//     transaction (persistence.FinishActions), with at most two batches
//     in flight (each on a pinned connection of its own) while the next
//     accumulates; while actions are still running a batch waits up to
//     linger (1 ms) for more, since actions claimed together finish nearly
//     together. The instance-action counters
//     get one increment per instance action per batch, appended as a row
//     of its own (schema 8), so no batch, of this process or another,
//     waits for another's counter row.
//   - One lease keeper per process (the keeper part) renews the
//     process lease (one row, whatever the number of accounts) and the
//     claims in flight every SweepEvery, on a connection of its own
//     outside the pool (persistence.Session) where nothing else runs,
//     each statement within Lease/4; it takes and releases the account
//     leases held under the process lease on a second connection of its
//     own. However busy the pool, however slow the controllers, however
//     many accounts are taken or released, a renewal never waits for a
//     pooled connection nor for a take or a release.
//
// # The parts
//
// The Supervisor is an assembly: it builds the parts, wires what they
// share, and starts and stops them. Each part has its own fields and one
// lifecycle (internal/startstop.Service: Start runs its goroutine, Stop
// cancels it and waits):
//
//   - keeper (keeper.go): two goroutines, each on a connection of its
//     own. The renewer renews the process lease (and moves its local
//     bound) and the claims, and reports LeaseHealth; the rounds take and
//     release the account leases, start and stop driving accounts, and
//     check the leases held against the database.
//   - claimer (claimer.go): the claim statements, on its pinned
//     connection, and the actions it starts (a goroutine each, counted so
//     Stop can wait for them). One goroutine besides the actions.
//   - completer (completer.go): the outcome batches, on its two pinned
//     connections. One goroutine besides the flushes in flight.
//   - the Supervisor's monitors: the notifications, the poll fallback,
//     the credentials checks (health.go) and the links monitor
//     (links.go). Four goroutines, one lifecycle.
//
// What they share is passed to each explicitly: the table of accounts
// (table.go: the accounts wanted, the leases held with their bounds, the
// accounts driven, the links busy, under one mutex), the record of claims
// (claims.go), the connector cache (targets, account.go: the connectors
// themselves are built by accountconn, as the engine's credentials check
// and reconcile build theirs) and the wake-up channels of the claimer and the keeper. Start starts the keeper, the
// completer, the claimer and the monitors, in that order. Stop stops every
// account (no new claim, running actions cancelled), then the claimer, the
// monitors and the keeper's rounds, waits for the running actions, lets
// the completer write everything, and only then returns every claim of
// the owner to the queue and releases the leases, on the keeper's side.
//
// # One slow controller
//
// A controller call holds no pooled connection: the connector locks
// (persistence.Lock, for read-modify-write of shared controller state)
// all live on one connection of their own, taken with
// pg_try_advisory_lock and retried while another process holds one, so
// a lock held while a controller answers costs no connection. What the
// accounts share (the pool, the claimer, the completer, the keeper) is
// never held for the length of a controller call; what one account's
// slow calls take is its own Options.Parallel slots. Monitoring is walled
// off the same way: one credentials check and two link status calls per
// account at most (monitorParallel of each in the process), none waited
// for by the others, so a controller that does not answer delays only
// the monitoring of its own accounts (a call over a bound waits for the
// next round).
//
// What the process keeps per account is a map entry, not a goroutine: the
// lease, the count of actions in flight, and the account's connector
// cache (the account, its WIM, its port mappings and the connector built
// from them), rebuilt before the account's next action after a change
// notification. 10,000 idle accounts cost 10,000 map entries.
//
// # Who holds a claim
//
// A claim is held only while its work runs. Concretely:
//
//   - Taken: by the claimer, in one statement, under a name used once
//     ("<owner>#<n>", persistence.ClaimName), and only for accounts whose
//     lease the process holds in PostgreSQL. Each row comes back with the
//     epoch of that lease: a row claimed under a lease the supervisor
//     does not drive (not yet known, stopping, or of another epoch) is
//     released at once. The supervisor records the claim (its record is
//     the set of claims in flight) before anyone can compare that record
//     with the database. The claim statement is not cancelled by Stop: cut
//     short it could still commit, leaving a claim in no record.
//   - Renewed: every SweepEvery (Lease/3), exactly the claims in the
//     record, by key and name (persistence.ExtendClaims). Nothing is
//     renewed "for the process": a claim that nobody runs any more is
//     never renewed, so it expires within one lease even while the
//     process lives.
//   - Released: with the outcome, in the completer's transaction, which
//     only lands while the action is still held under the same name and
//     the account's lease is still held under the same owner and epoch
//     (fencing: an outcome of an older claim, of this process or another,
//     is refused as persistence.ErrClaimLost and the action's new holder
//     decides; one refused because the lease was lost goes back to the
//     queue at once).
//   - When the outcome cannot be written: while the database is away the
//     write is retried, with back-off, for up to one lease (the claim
//     stays in the record and is renewed once the database answers); a
//     batch the database refuses is split in halves down to the outcome
//     it refuses, which is replaced by actions.Runner.Unrecorded. If
//     nothing could be written, the claim is given up: it leaves the
//     running set (no more renewal), the sweep releases it as soon as the
//     database answers, and otherwise it expires. The action then runs
//     again, which every action is written to survive.
//   - When an account stops (its lease was lost or it is no longer
//     wanted): nothing more is claimed for it, its running actions see
//     their context cancelled and come back as "interrupted" (due at
//     once), their outcomes are written, and only then is the lease
//     released.
//   - On Stop: the claimer stops, running actions are cancelled and
//     written back as above, the completer writes everything, and every
//     remaining claim of the owner is released.
//   - A process that dies leaves its claims to expire; the sweep of any
//     live process (the cluster leader's chores.Rescuer, once there is a
//     leader) returns expired claims to the queue.
//
// # The process lease
//
// Each process holds one lease of its own (wim_process_leases: its owner
// name, the epoch of its current run, an expiry), and each account lease
// names its holder's owner and epoch: an account lease is held while
// that process lease is valid. So a renewal is one row, however many
// accounts the process holds (each account lease was a row written every
// round, and at 50,000 accounts one renewal did not finish within a
// quarter of the lease).
//
//   - Started with a new epoch by the keeper's first round (and again
//     after it was lost): the account leases of the owner's earlier epochs
//     are free from then on.
//   - Renewed every SweepEvery by the keeper's renewer, only while still
//     valid: an epoch whose lease expired is dead for good. A renewal
//     that finds it dead stops every account at once and starts a new
//     epoch, which takes the accounts again (the account epochs grow).
//     The renewal writes that one row and reads nothing else, so it
//     costs the same at 10 accounts and at 100,000.
//   - An account is taken with one row, in chunks of 2,000 accounts per
//     statement, by the keeper's rounds, and only when it is free: never
//     taken, released, already this process's, or held under a dead
//     process lease. The taker first marks an expired holder's lease dead
//     under that row's lock, so a renewal begun before the expiry either
//     committed first (nothing is taken) or finds its lease dead: never
//     two holders. A take holds its own process lease row FOR KEY SHARE
//     until it commits: no taker can mark it dead meanwhile (that lock
//     waits), and the renewal, which only moves expires_at, does not wait
//     for it. A take renews nothing.
//   - Released one row per account (reassigned away, or on Stop), which
//     hands the account over at once: each release statement sends one
//     notification (persistence.NotifyReleased), and a process waiting for
//     a lease takes what is free then. A take tries only the accounts
//     that look free, so it never locks the row of a lease another
//     process holds (and is about to release). On Stop the process lease
//     is ended too.
//   - Each round of the keeper also counts the account leases the
//     database holds under the epoch (an index-only read); when the count
//     differs from the process's own, it reads which: one missing there
//     was lost (the account stops), one there and not here is held again
//     when wanted and released otherwise (a release that failed is
//     retried so). The rounds are the only path that takes and releases,
//     so the two counts agree between their statements.
//
// The renewer and the rounds share the table (the process lease, its
// local bound and the leases, under the table's mutex), and only the
// renewer changes the process lease. What each can find the other doing:
//
//   - A take under an epoch the renewer has just found lost: the take
//     commits only while that epoch is valid in the database (its lock
//     check), so it either committed before the expiry, and the renewal
//     would then have found the lease renewed, or takes nothing and
//     returns ErrLeaseLost (the rounds then ask the renewer to renew at
//     once). Leases that come back after the renewer dropped every lease
//     and forgot the epoch are not held: the rounds add a take's leases
//     only while the table still names the epoch they took under. Their
//     rows hang from a dead epoch: free to anyone.
//   - A release of leases of an epoch that was lost meanwhile: it
//     matches owner and account epoch, and an account taken again under
//     the new epoch has a new account epoch, so it frees nothing it
//     should not.
//   - A renewal while a take waits on rows another process is
//     releasing: the renewal goes through (FOR KEY SHARE above); before
//     it was an update of the same row, and waited for the take.
//   - A bound that passes while a renewal is in flight: the renewal
//     moves a bound that holds without the table's mutex (an atomic
//     compare-and-swap), and never one that passed or was retired: the
//     accounts stopped under it stay stopped, the renewal starts another
//     bound under the mutex, and the next round holds the leases again
//     (reconcile). So no part holding the mutex (the rounds starting
//     accounts, a thousand at a time; the claimer) delays a renewal's
//     effect where it matters.
//   - A new epoch starting (after a loss) while a take holds the old
//     row: the new epoch's upsert waits for that take; nothing is held
//     then, so nothing is at stake in the wait.
//
// On Stop, the rounds stop with the claimer; the renewer goes on renewing
// the leases and the claims until every outcome is written, and stops
// right before they are released.
//
// # What a lease guarantees
//
// The process lease and each claim also have a local validity bound: the
// start of the statement that last renewed it (the keeper's renewer:
// a take renews nothing), on the process's monotonic clock
// (time.Now carries it), plus Lease, minus a margin of Lease/5 (for the
// time from a check to the request reaching the controller, and for the
// drift between this clock and the database's). The database set the
// expiry to its now() + Lease after that start, so while the bound holds
// no other process can have taken the process's account leases or the
// claim. Every account lease held has the process lease's bound. (So
// Options.SweepEvery must stay well under Lease*4/5: the default Lease/3
// leaves room for two failed renewals.)
//
//   - When the bound passes without a renewal (the database away or slow,
//     the process paused or starved), every account is stopped at once
//     (its context cancelled, no new claims) and no longer reported as
//     owned (Owned, Accounts, wimro_accounts_owned); the keeper's next
//     renewal renews the process lease if it can, under the same epoch if
//     it is still valid, and its next round holds its account leases
//     again without writing them. This does not wait for a later renewal
//     to say the lease is lost.
//   - Right before every call that changes the controller, the action's
//     lease and claim bounds are checked (connectors.WithFence): by the
//     account's connector wrapper before each create, edit and delete,
//     by the REST client when it starts a POST, PUT, PATCH or DELETE, and
//     last in the Write of the connection that carries that request, as
//     its first byte is about to leave: after the wait for a pooled
//     connection, the dial, the TLS handshake and any proxy, so that a
//     process paused in any of them sends nothing once resumed past its
//     bound (connectors/rest, fence.go). A call past either bound is not
//     sent, and the action comes back "interrupted" (due at once, for the
//     lease's holder), never failed.
//
// What this does not guarantee, since controllers take no fencing token:
//
//   - A request sent before the bound passed can still land after it: one
//     that was on the wire (or queued in the controller) when the process
//     was paused, and one sent in the instant between the check and the
//     write system call, a few instructions apart (the margin covers that
//     instant, not a pause that falls inside it). Its outcome is then refused by the database
//     (the completer's fencing), and the lease's new holder runs the
//     action again, which every connector's create and delete survive
//     (they adopt, or find nothing to delete).
//   - The bound is only as good as the monotonic clock. CLOCK_MONOTONIC
//     does not advance while a virtual machine is suspended (nor, on
//     Linux, during a system suspend): a process whose VM was frozen for
//     longer than a lease wakes up believing its leases still valid for
//     whatever was left of them, and can send changes for up to
//     Lease - margin after resuming, while another process may hold the
//     leases. Run wimd where a freeze is shorter than the margin, or make
//     Lease long enough for the freezes the platform can cause (live
//     migration pauses are usually well under a second). A SIGSTOP, a GC
//     pause or a starved scheduler do not have this problem: the monotonic
//     clock goes on.
//   - A connector lock (persistence.Lock) lives on a session: if that
//     connection breaks while a call runs under the lock, PostgreSQL frees
//     the lock and the holder is not told.
//
// A claim counts no attempt: vim_wim_actions.attempts grows with an
// outcome whose run reached the controller (wimro.Outcome.Reached),
// in the statement that writes it. An interrupted run, an outcome refused
// as ErrClaimLost, a claim given up or expired leave it as it was, so a
// CREATE gives up after MaxAttempts calls the controller failed, not
// after restarts or lost leases. A DELETE never gives up (actions/doc.go);
// its retries past MaxAttempts are counted in
// wimro_delete_retries_past_max_total.
//
// VerifyClaims checks the invariant that follows: every unexpired claim
// the database holds under this owner is in the record. The tests run it
// continuously.
//
// A panic in a connector fails its action (actions.Runner.Run recovers);
// the process goes on.
//
// # Who writes a WAN link's status
//
// Two writers, never at once:
//
//   - Outcomes (the completer, persistence.FinishActions): an action owns
//     its link from the moment it is queued until its outcome is written.
//     CREATE makes it BUILD, the refresh copies the controller's status
//     (ACTIVE, DOWN, ERROR; WIM_ERROR while the controller cannot be
//     read), a failure makes it ERROR, DELETE makes it DELETED.
//   - Monitoring (links.go, every MonitorInterval): only links that no
//     action owns. It re-reads a created link whose latest action is a
//     CREATE that finished DONE and whose status is ACTIVE, DOWN, ERROR or
//     INACTIVE, and records what the controller says: ACTIVE; DOWN or
//     ERROR with the controller's message; DOWN when the controller no
//     longer has the service (the message says `wimd reconcile --fix`
//     creates it again); INACTIVE when the controller reports the service
//     BUILD or INACTIVE (BUILD on a link means an action is making it).
//     A call that fails (timeout, refused, 5xx, 401) changes nothing: the
//     account's credentials check shows the controller unreachable, and a
//     link is not DOWN because its controller is.
//
// They cannot collide because the monitor's write
// (persistence.RecordLinkStatus) is fenced like an outcome and more: it
// lands only while this process holds the account's lease under the same
// owner and epoch, only while the link still has the status the monitor
// read (compare-and-set, on the locked row), only while no action came
// after the one that was the link's latest then, and only while no
// action of the link is unfinished. An action queued after the write is
// ordered after it, and its outcome wins. The monitor also skips a link
// the claimer is running, and makes at most one call per link at a time.
// A change of status moves status_since and is an event of the link's
// latest instance action, in the same statement, and is counted in
// wimro_wan_link_transitions_total{from,to,service_type}.
//
// Wake-ups: the engine sends NOTIFY on the wimro_accounts channel when an
// account, its WIM, its port mappings or its actions change; the
// Supervisor LISTENs, marks the account's connector for a rebuild and
// wakes the claimer. A release of account leases sends one NOTIFY on the
// same channel (payload persistence.NotifyReleased), which wakes the
// keeper of a process waiting for a lease. A poll loop covers a lost notification. A network
// reported by the NFVO makes the waiting CREATEs of its links due in the
// report's transaction (persistence.MakeLinksDue); one reported while its
// CREATE runs (and may have read the network before the report) marks it
// with the run's claim, and the outcome of that run, if it still waits,
// is due at once: two networks reported together never leave the link
// waiting for the next re-check.
//
// Ownership comes from outside: SetAccounts says which accounts this
// process owns (the cluster coordinator calls it; the "none" coordinator
// gives it every account, following the account list as it changes).
package wimthread
