// Package chores holds the cluster's chores: the duties one process runs
// for the whole cluster while it leads (coordinator.Chore; the "none"
// coordinator's process always does). Rescuer returns expired claims to
// the queue; Retention purges the history of deleted instances and the
// old entries of the API's audit trail; wimd's
// drift reconcile is built on Periodic too. They left wimthread, which
// runs the accounts a process owns, because they serve no account: they
// follow leadership (issue 30).
package chores
