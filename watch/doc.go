// Package watch is toolgate watch: a live terminal approver on the
// daemon's approver socket. On a terminal it is a full-screen program
// (bubbletea) that lists each pending ask as it arrives, shows the
// selected one readably, and approves or denies it with single keys; on
// anything else (a pipe, a log) it prints one line per event and reads
// typed commands. Both reconnect on their own when the daemon restarts.
//
// It talks to the daemon only through package client, and shows tool input
// only through render; it must not import the daemon, the ledger or the
// policy engine.
package watch
