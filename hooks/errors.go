package hooks

import "errors"

// Sentinel errors. Each failure of this package wraps one, and each ends in
// a deny.
var (
	// ErrUnknownHarness marks a harness name hookgate does not speak.
	ErrUnknownHarness = errors.New("unknown harness")
	// ErrMalformed marks a payload that is not the JSON shape its harness sends.
	ErrMalformed = errors.New("malformed hook payload")
	// ErrTooLarge marks a payload or message over its size cap.
	ErrTooLarge = errors.New("hook payload too large")
	// ErrUnknownEvent marks an event name the harness's protocol does not define.
	ErrUnknownEvent = errors.New("unknown hook event")
	// ErrNoPolicy marks a check with no policy source, or one that cannot be read.
	ErrNoPolicy = errors.New("no policy")
	// ErrServer marks a ruling server that cannot be reached or answers wrongly.
	ErrServer = errors.New("ruling server failed")
	// ErrConfigForm marks a harness configuration file hookgate does not
	// edit: an edit in its form would not read back as the file plus the
	// change.
	ErrConfigForm = errors.New("configuration not edited")
)
