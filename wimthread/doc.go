// Package wimthread runs one worker per WIM account owned by this process,
// and the Supervisor that starts, reloads and stops them.
//
// The queue lives in PostgreSQL (vim_wim_actions); a worker's memory is a
// cache. A worker claims due actions of its account with one statement
// (persistence.ClaimActions): the actions of one WAN link strictly in
// order, different links in parallel up to Options.Parallel. Each claim
// records the owner and a lease; the outcome is written in one transaction
// only while the claim is still the owner's (fencing), and a sweep returns
// expired claims to the queue, so a process that dies mid-action loses
// nothing: another worker, or this one after a restart, runs the action
// again, and actions are written to be safe to run twice.
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
