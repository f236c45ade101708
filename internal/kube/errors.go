package kube

import "errors"

var (
	// ErrOptions is returned for options that name no valid session (an
	// empty image, a reserved uid, an invalid name).
	ErrOptions = errors.New("invalid options")
	// ErrPolicy is returned for a policy file that does not resolve or
	// that the sidecar could not enforce.
	ErrPolicy = errors.New("policy")
	// ErrDecode is returned for an object on inject's input that does not
	// decode strictly into one Pod, Deployment, StatefulSet or Job.
	ErrDecode = errors.New("decode")
	// ErrUnsafe is returned for an object inject cannot make safe.
	ErrUnsafe = errors.New("cannot be made safe")
)
