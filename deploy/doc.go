// Package deploy derives the seccomp profiles that let sandboxd run nested
// inside a container from the profile they extend, Docker's default
// (seccomp/docker-default.json, kept verbatim), and lists each rule it adds
// with the reason sandboxd needs it (Additions): seccomp.json in the format
// Docker, Podman and CRI-O read (SeccompProfile), and containerd/*.json,
// the same resolved for containerd, which reads only the runtime spec's
// plain form (ContainerdProfile).
//
// The profiles are data: the engines read the JSON files, not this
// package. The package and its test keep the files honest: regenerating
// them from the base must give the committed bytes (go test ./deploy
// -update rewrites them), and the only difference from the base is the
// rules in Additions. README.md explains the difference and how each rule
// was shown to be needed.
package deploy
