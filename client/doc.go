// Package client is the one client of the daemon's protocol (package
// api): the hook binary, toolgate run, the prompt tool, the approvers
// (watch, notify, web, demo) and the CLI talk to the daemon through it.
//
// It speaks HTTP/1.1 over the Unix socket itself (http.go, socket.go)
// rather than with net/http, so that the hook binary, spawned for every
// tool call, starts without net/http's and crypto/tls's initialisation;
// it imports api, paths and the standard library only. Trust says which
// daemon a client may talk to (the kernel's credentials of the socket's
// listener); Follow is the approvers' view of what waits for a person;
// Ensure finds the daemon that serves a ledger, or starts one, without
// linking the daemon: toolgate run and doctor do not carry the ledger.
package client
