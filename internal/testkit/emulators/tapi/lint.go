package tapi

// The yanglint checks of the emulator: emulator.Linter over the modules
// of Options.YANGDir.

// Close stops the yanglint process that Options.YANGDir starts.
func (e *Emulator) Close() {
	if e.lint != nil {
		e.lint.Close()
	}
}

// LintFailures returns what yanglint refused so far: request bodies (which
// the emulator answered 400) and answers of its own (a bug of the
// emulator, answered 500). Empty when Options.YANGDir is not set.
func (e *Emulator) LintFailures() []string {
	if e.lint == nil {
		return nil
	}
	return e.lint.Failures()
}

// Linted returns how many documents yanglint has checked.
func (e *Emulator) Linted() int {
	if e.lint == nil {
		return 0
	}
	return e.lint.Checked()
}
