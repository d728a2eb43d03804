// Package systest holds the system tests: they build the tierlog binary
// and run it as separate processes, kill them (SIGKILL) and pause them
// past their leases (SIGSTOP), and check the invariants of docs/design.md
// on everything the clients were told. TestCrashKill9 runs one server on
// the local backend; TestTorture and TestExactlyOnceChaos run three on the
// aws backend against dynalite and the S3 emulator. All skip under -short
// (make unit); make test runs them.
package systest
