package results

import "time"

// StoredProfile is a probe's learned shape profile (SPEC §5) as a store
// keeps it: the JSON stored form of results/shape.Profile, which this
// package does not read.
type StoredProfile struct {
	Probe string
	// Data is the stored form; "" when the probe has none yet, or since
	// it was reset.
	Data string
	// Answers is how many answers the profile learned from, for readers
	// that do not decode Data.
	Answers   int
	UpdatedAt time.Time
	// ResetAt is when `toolpulse baseline reset` last reset the probe's
	// profile; zero when never.
	ResetAt time.Time
}

// ProfileUpdate is a probe's profile as drift detection left it after a
// run, for the store to save in the run's transaction.
type ProfileUpdate struct {
	Data    string // the stored form
	Answers int
	// ResetAt is the reset the profile was learned after (StoredProfile's
	// ResetAt when it was read). A store saves the profile only while the
	// probe's latest reset is still that one, so that a reset made
	// meanwhile is not overwritten by what was learned before it.
	ResetAt time.Time
}

// ShapeSeen is a shape a probe's runs showed, with how many runs showed it
// and when the last did: what a probe's first profile is built from when
// it has runs from before profiles existed.
type ShapeSeen struct {
	Fingerprint string
	Canonical   string
	Runs        int
	LastSeen    time.Time
}
