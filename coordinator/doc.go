// Package coordinator decides which WIM accounts this process runs, and
// which process runs the cluster-wide chores. It knows nothing of workers:
// it tells a Runner the accounts it should own (SetAccounts) and starts or
// stops Chores (package chores: the expired-claim rescue, the retention
// purge, and wimd's periodic drift reconcile) as this process gains or
// loses the right to run them, the way a leader's components are switched
// on without knowing about leadership.
//
// Two modes: None (this process owns every account and runs every chore)
// and Consul (processes split the accounts through Consul). Whatever the
// coordinator says, PostgreSQL has the last word: the Runner drives an
// account only while it holds that account's lease row (valid while its
// process lease is: wimthread's doc, "The process lease"). Consul decides
// who should own an account; PostgreSQL decides who may.
//
// # Consul keys
//
// Under Prefix (default service/wimro):
//
//	<prefix>/members/<id>                   JSON Member {id, address, started_at, version}
//	                                        and "assignment_layout": 2; acquired with the
//	                                        process's session; released with "left_at"
//	                                        added by a clean leave (Stop), then deleted
//	                                        by the leader once seen
//	<prefix>/leader                         the leader's instance id; acquired with its session
//	<prefix>/assignments/<id>#shards/       marker: the leader confirmed member <id>
//	                                        (value: the leader's id)
//	<prefix>/assignments/<id>#shards/<ss>   the accounts of shard <ss> assigned to member
//	                                        <id>: their ids, sorted, one per line
//	<prefix>/assignments/<id>/              the per-account layout's marker (value: the
//	<prefix>/assignments/<id>/<uuid>        leader's id), and account <uuid> assigned to
//	                                        <id> (empty value): see "Mixed versions"
//
// The session, named "wimro <id> boot <nonce>" (the nonce is new at every
// start), has behaviour "delete" (its keys go with it), the configured TTL
// and an explicit lock-delay, and is bound to the node's serfHealth and to
// this process's service check (below). Only the leader writes
// assignments, in transactions that first check that the leader key is
// held by its session: a deposed leader writes nothing.
//
// A member's assignment is at most 256 values: shard <ss> is two hex
// digits of FNV-1a of the account id, so one account moving rewrites one
// value of about 1/256 of the member's accounts (about 130 ids, 4.8 KB,
// for a member of 33,000 accounts). Each transaction carries at most 64
// operations and 256 KiB of values (Consul refuses a value, and a request
// body, over 512 KiB; a transaction's values travel in base64). A value
// over 256 KiB is an error of the pass: about 1.8 million accounts on one
// member. The one key per account of before took, for a member joining a
// cluster of 100,000 accounts, 33,000 keys in about 530 transactions, and
// every member's watch of its folder read thousands of keys at each.
//
// # Mixed versions (a rolling upgrade)
//
// The processes before the sharded layout read and write the per-account
// layout alone, and their membership records name no layout. The rule:
//
//   - while a live member's record names no layout 2, the leader writes
//     the per-account layout for every member, and deletes the sharded
//     folders once it has written the markers; otherwise it writes the
//     shards, and deletes the per-account folders last, once each
//     member's shards and marker are written;
//   - a process of the sharded layout applies its per-account folder
//     while that folder's marker is there (only a leader writing that
//     layout writes it, after a sharded leader deleted it), else its
//     sharded folder; the leader plans from what each member applies, so a
//     member moves from one layout to the other with the accounts it runs;
//   - an old leader reads "<id>#shards" as the folder of a member that
//     is not live ('#' is in no instance id) and deletes it; an old member
//     never reads a sharded folder.
//
// So an old member is given its accounts by whichever leader leads, a new
// member reads whichever layout the leader writes, and a folder of the
// other layout left over goes at the next pass. Whatever Consul says, a move still
// waits for the previous owner's PostgreSQL lease: a member that read an
// out-of-date layout for a moment runs nothing another member holds.
//
// # Service and check
//
// Every process registers in the local agent's catalog a service named
// Service ("wimro"), id "<Service>-<instance id>", with its API address and
// the meta instance_id, boot, version and consul_prefix, and a TTL check
// "<service id>:ttl:<boot>" (CheckTTL). It passes the check every CheckTTL/3
// while Health is nil and marks it critical at once, with the reason as
// output, when Health fails. Consul invalidates a session whose check
// goes critical, so the keys of a process that died, hangs, is paused or
// is unhealthy go within one check TTL; a session TTL alone would take
// one to two TTLs (Consul invalidates a session no earlier than TTL after
// its last renewal, in practice up to 2 x TTL, and refuses TTLs under
// 10 s). A session is created only while the check passes (Consul refuses
// it otherwise). The agent forgets the service of a process whose check
// stays critical for 10 minutes; one that comes back (or finds the agent
// restarted empty) registers again. CheckTTL < 0 registers nothing: the
// session is bound to serfHealth alone, as before.
//
// A process restarted at once under the same instance id (killed, then
// started again by systemd or the soak) finds its dead predecessor's
// registration, another boot, in the agent. Its check still passes for
// up to one TTL after the predecessor's last pass, so the new process
// waits, looking every TTL/20: once that check is critical (or gone) it
// registers, replacing the service and removing the old check (the check
// id names the boot), and Consul invalidates the predecessor's session at
// once: its membership key is free within about one check TTL of the
// kill. Were the check id the same for every boot, the re-registration
// would take the dead session's check over and keep that session alive
// until its own TTL lapsed (up to 2 x SessionTTL: the restarted member
// waited 20 s for its key). A registration of another boot whose check
// keeps passing longer than one TTL (plus the timeout of a pass) belongs
// to a live process given the same instance id: this process is refused
// (Failed), as when it finds its membership key held by another live
// process's session. A refused process (or one stopped while it waited)
// deregisters nothing on leaving: the registration is the live one's,
// and removing it would end that process's session.
//
// # Timings (defaults)
//
//   - CheckTTL 3 s, passed every CheckTTL/3; a session whose check could
//     not be passed for CheckTTL - CheckTTL/4 is given up (Consul
//     invalidates it at CheckTTL).
//   - SessionTTL 10 s, renewed every TTL/3, each call bounded by TTL/3.
//     Renew answering "gone" makes a new session at once; a session not
//     renewed for TTL - TTL/4 is given up (Consul invalidates a session
//     no earlier than TTL after its last renewal) and destroyed as soon as
//     Consul answers again.
//   - LockDelay 1 ms, Consul's least, sent explicitly (Consul's default
//     is 15 s and the Go API drops a zero). A delay would only hold a
//     dead leader's successor back: a deposed leader's assignment writes
//     are refused by their session check, its chores' writes are fenced
//     in PostgreSQL, and a paused leader can outlive any delay anyway.
//   - Blocking queries wait at most 5 s on the server, are cancelled with
//     their context, reset their index when it goes backwards (next read
//     is plain) or to 0 (block on 1), and are rate-limited (burst 2, one
//     per 100 ms).
//   - LeaderSoak 1 s: membership and the account list must stay unchanged
//     that long before the leader computes owners, except after a clean
//     leave, handled at once (it is final). Pending moves are tried again
//     when a lease is released (LeaseReleases), when the first lease they
//     wait for expires (by the database's clock), and every LeaderSoak;
//     everything is checked again, and the accounts listed again, every
//     Relist (1 min) as a safety net.
//   - AssignmentSoak 100 ms: a member's assignment must stay unchanged
//     that long before it goes to the Runner.
//   - The account lease (wimd's --claim-lease, 5 s, renewed every 1.67 s)
//     bounds every takeover of a live or dead holder's accounts: with
//     the defaults a dead leader's accounts are owned again within about
//     max(CheckTTL + LeaderSoak, lease) + AssignmentSoak = 5.1 s, plus
//     the time the new owner takes to take the leases.
//   - A failing Consul call is retried after 50 ms, 100 ms, 200 ms,
//     500 ms, 1 s, 2 s, then every 5 s; each loop counts its own
//     failures, and a success resets them.
//
// # Instance ids and lease owners
//
// A process's instance id names its keys; its Runner takes account leases
// and action claims under LeaseOwner: "<instance id>#<boot nonce>". Two
// processes given one id (a copied configuration, a restart while the old
// process still runs) therefore never share a lease or its epoch; wherever
// a lease owner is compared with a member, its instance id part is used.
// With Consul the second live process is also refused: its membership key
// is held by a session of another name; a dead previous run's session
// expires within two TTLs, so a key held by the same foreign session for
// longer than 2 x its TTL + lock-delay + one call timeout is another live
// process, and Failed delivers an error naming it (wimd exits with it).
// Until then that process applies no assignment and does not compete for
// leadership: both wait for its membership key. (Consul restarts session
// timers when its own leader changes, so a dead run's session can outlive
// that bound once in a while: the refused process then exits, and its next
// start finds the id free.)
//
// # Roles
//
// Every process keeps a session and its membership key (acquired again
// whenever it is lost), competes for the leader key once it holds its
// membership key, and applies its own assignment folder while it holds
// its membership key. Both need Health (the Runner can keep its leases):
// see "Stepping down". Leadership: the key is acquired when vacant —
// missing or held by no session — at once, and again after the
// lock-delay if Consul refused (the delay is in force after a holder's
// session was invalidated); it is watched with blocking reads. A term
// ends when the key is seen held by another session or vacant, when the
// session ends (gone, or not renewed within TTL minus the margin), or
// when Health fails.
// The term starts the Chores and stops them when it ends.
//
// The leader watches the members (keys held by a session) and the account
// list (persistence.ChannelAccountList notifications, resyncs, the
// periodic re-list), lets them settle for LeaderSoak, and computes owners
// by rendezvous hashing (highest-random-weight of member id and account
// id): only the accounts whose best member changed move. It deletes what
// is no longer wanted first (the whole folder of a member gone), then
// writes folder markers and new assignments. An account moves only once
// its previous owner let go: its PostgreSQL lease is free (released, or
// its holder's process lease expired: LeaseHolders lists only leases
// held under a valid process lease) or already the new
// owner's (the lease owner's instance id is the member id), or its holder
// has been out of the membership for one session TTL (long enough to
// re-create a session after Consul restarts; its lease then expires on its
// own). Until then the move is pending and tried again every LeaderSoak.
// When the leases cannot be read every move is pending, but the
// revocations and the folder markers are written all the same: a member
// is confirmed (and becomes ready) without the leader reading PostgreSQL.
//
// A member applies its folder only when the marker is there: an absent
// marker means no leader confirmed this member (yet, or any more: it was
// taken for gone, or Consul came back empty), and the Runner keeps what
// it has. Ready turns true with the first set applied, an empty one
// included (in a cluster without accounts the leader still writes every
// member's marker), and again with the first set applied after the
// process left the cluster for want of Health and rejoined; it is false
// while Health fails.
//
// # Stepping down
//
// Health (wimd: the supervisor's LeaseHealth) fails when the Runner has
// not reached PostgreSQL to renew its leases for one lease: its leases
// have expired or are about to, and it can prove it owns nothing. Asked
// every 200 ms; while it fails the process:
//
//   - marks its check critical: Consul invalidates its session, and no
//     new one is made until the check passes again;
//   - ends its term at once if it leads: the chores stop, then the leader
//     key is deleted (not left to expire with the session), so a healthy
//     member acquires it within its watch, with no lock-delay;
//   - deletes its membership key: the leader takes it for gone, drops its
//     folder and gives its accounts to the others as soon as their leases
//     are free, which they are, having expired in PostgreSQL;
//   - does not compete for leadership and applies no assignment (its
//     Runner keeps what it has, fenced by the leases it no longer holds);
//   - is not Ready, and /readyz names the lease error.
//
// When Health is nil again it passes its check, makes a new session,
// acquires its membership key, competes again, applies its folder once the
// leader confirmed it, and is Ready again.
//
// # Failure cases
//
//   - Consul unreachable: every call is retried with the back-off above.
//     The Runner keeps its accounts (SetAccounts is never called because
//     Consul is away) and PostgreSQL leases go on fencing them. A leader
//     whose session cannot be renewed steps down within TTL minus the
//     margin and stops its chores. When Consul answers again, the old
//     session is renewed if still alive, otherwise a new one is made (the
//     old one destroyed); membership, leadership and the assignment folder
//     are taken up again without a restart.
//   - Consul restarted empty: sessions are gone, every member makes a new
//     one and rejoins, a leader is elected and writes the same owners
//     again (moves wait for the lease holders to rejoin); the Runners are
//     told nothing new in between.
//   - Session destroyed or expired behind a process's back: its keys are
//     deleted, it makes a new session and acquires its membership key
//     again after the lock-delay; a leader ends its term and competes
//     again.
//   - Process crash, hang or pause (SIGSTOP): its check is not passed, and
//     its session is invalidated within CheckTTL (without a check: TTL to
//     2 TTL); its keys go, and the leader logs it lost ("member lost",
//     departure "session invalidated") and drops its folder; its accounts
//     move once their leases expire. A paused process that resumes finds
//     its session gone and its leases lost, and rejoins.
//   - Clean leave (Stop): the leader logs it ("member left the cluster",
//     departure "clean leave"), reassigns at once and gives the accounts
//     as their leases are released.
//   - Member cut off from Consul but not from PostgreSQL: its check lapses
//     and Consul invalidates its session; the leader takes it for gone and,
//     once it has been gone one session TTL, assigns its accounts to the
//     others. It keeps running them under their leases, which it keeps
//     renewing: the new owners wait for the leases until it returns (its
//     accounts are then assigned to it again) or stops.
//   - Member (the leader included) cut off from PostgreSQL but not from
//     Consul: once its leases could not be renewed for one lease it steps
//     down and leaves (see "Stepping down"); a healthy member leads, and
//     owns its accounts after the leader soak and the assignment soak.
//     A leader that cannot read the leases (but still renews its own)
//     keeps leading: it confirms members and revokes, and its moves wait.
//   - Cut off from both: the session is given up after TTL minus the
//     margin (Consul deletes its keys at its expiry), and the leases
//     expire; the others take over as after a crash.
//   - Two processes with one instance id: see "Instance ids and lease
//     owners".
//   - Two leaders (a deposed one not yet aware): its assignment writes are
//     refused by the transaction's check of the leader key's session.
//
// # Stopping (SIGTERM)
//
// Consul.Stop stops the loops, stops the chores, deletes the leader key
// (if held), releases the membership key marked as left, destroys the
// session and deregisters the service: the other processes take over at
// once rather than after a check or session TTL. wimd stops the parts in
// this order:
//
//  1. the HTTP API;
//  2. the coordinator (Stop): no SetAccounts after it returns, the leader
//     hands over at once and moves this process's accounts as soon as
//     their leases are free;
//  3. the Runner (the supervisor's Stop): workers finish and write their
//     outcomes, claims and account leases are released (with a NOTIFY,
//     so the new owners take them at once);
//  4. the notification listener and the database.
package coordinator
