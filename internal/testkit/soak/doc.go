// Package soak is wimro's soak test (TestSoak): a real cluster — three
// wimd processes in consul mode, one PostgreSQL (internal/pglocal), one
// Consul agent (internal/testkit/consultest), an IETF L2VPN controller with
// 100 ms latency and a TAPI controller (internal/testkit/emulators) — under a
// continuous load of instances created, edited and deleted over 50
// accounts, while faults chosen at random from a printed seed come
// together: wimd SIGKILLed and restarted, SIGSTOPped for longer than its
// session TTL plus its claim lease, PostgreSQL restarted (fast and
// immediate shutdown) or its connections cut, the Consul agent
// restarted, a controller that hangs, answers 5xx in bursts, throttles
// with 429 and Retry-After, or acts and drops its reply.
//
// It checks, during the run and exactly once the load stops and the
// faults heal: every action ends DONE or FAILED (no DELETE fails) with
// counters equal to its tasks; every ACTIVE link has exactly one service
// and no controller holds a service after the last delete; no account's
// services are changed by two processes at overlapping times, nor by a
// process after another took its lease (the controllers' logs held
// against the lease epochs); the API answers no 5xx but 503 while
// PostgreSQL is away; the goroutines and heap of every process return to
// their baseline. It prints a table (faults by kind, recovery times,
// actions, duplicates, orphans, late writes); a failure prints the seed
// and the event log, and the same seed replays the same fault schedule.
//
// The timings come from wimd itself (`wimd serve -h` under the
// environment the processes get), never from constants here, so the
// faults follow wimd's defaults when they change.
//
// `make test` runs 3 minutes; `make soak` runs DURATION (default 10m)
// with SEED, e.g. `make soak DURATION=30m SEED=42`, and FAULTS keeps only
// the kinds it lists (`FAULTS=kill,stop`; `none`: the load alone), which
// is how a failure of one kind is replayed without the others. Under
// `go test -v` the event log is printed as it happens.
package soak
