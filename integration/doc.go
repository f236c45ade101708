// Package integration holds end-to-end tests: sandboxd run against real
// namespaces, a fake internet the tests build in network namespaces of their
// own (DNS, HTTP, HTTPS and git servers on TEST-NET addresses), and real
// clients (curl, git, python3, a Go net/http program) inside the sandbox.
// They need root (to create network namespaces) and fail, rather than skip,
// under BARRY_REQUIRE_PRIVILEGED=1.
package integration
