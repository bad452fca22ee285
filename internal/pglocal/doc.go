// Package pglocal runs a PostgreSQL server from the machine's binaries, so
// wimd and the tests need neither Docker nor a server set up by hand. An
// owned server keeps its data folder between runs (wimd serve without a
// database URL); a throwaway one lives in a temporary folder removed on
// Stop (the test harness). PostgreSQL refuses to run as root, so as root
// the server runs as the unprivileged "postgres" user.
//
// Access: a throwaway server trusts every connection to 127.0.0.1 (any
// local user is its superuser: it holds test data only, and trust is
// fast). An owned server never trusts TCP: wimd generates a password for
// the superuser postgres, keeps it in PasswordFile (mode 0600) in the data
// folder, and pg_hba.conf asks it (scram-sha-256) on every TCP
// connection; only the Unix socket, in a 0700 folder that only wimd's user
// and the server's can enter, is trusted, and Start uses it to set the
// password. pg_hba.conf is rewritten on every start, so a data folder made
// by an older wimd with trust everywhere is switched on its next start.
//
// An owned server keeps its TCP port across restarts (PortFile in the data
// folder): whatever reads the port from postmaster.pid, or was given it,
// still finds the server after a restart. It moves, logged at WARN, only
// when another process took the port meanwhile. Its cluster_name is
// EmbeddedClusterName, readable by any client, so that a wimd pointed at
// another wimd's local server can say that this is not a database for a
// cluster. Options.TLSCert turns TLS on, and Options.HBA gives a throwaway
// server an access recipe to test.
//
// Halt and Resume stop a server and start it again on the same port and
// data folder, keeping its data, for tests of what clients do while their
// database is away.
//
// # Ownership
//
// One process owns an owned server at a time: the one holding the lock
// file beside the data folder (OwnerSuffix; a kernel flock, dropped
// however the owner dies). A second Start on the folder while the owner
// lives fails with ErrInUse, or with Options.Attach connects to the
// running server (port from postmaster.pid, password from PasswordFile)
// and never stops it: that is how `wimd migrate status` works beside a
// running `wimd serve`.
//
// The postgres process runs in a process group of its own, so a SIGKILLed
// owner leaves it running. The next Start takes the free lock, finds the
// live postmaster that postmaster.pid names, and stops it cleanly (fast
// shutdown, then waits for it to be gone) before starting its own child.
// It is stopped rather than reused because a reused postmaster is not our
// child: it could not be waited on, so it could not be supervised, and it
// may run with the settings of an older wimd; a fast shutdown writes a
// checkpoint, so no data is lost, and costs a second or two at start.
//
// # Supervision
//
// With Options.Supervise the owner watches its postgres process: if it
// exits without being asked (killed, crashed), it is logged at WARN with
// its exit status and started again on the same port and data folder,
// with back-off, until it runs or Stop or Halt comes. Clients reconnect by
// themselves; Options.Restarted counts the restarts.
package pglocal
