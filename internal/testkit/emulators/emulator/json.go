package emulator

// CloneJSON deep-copies a decoded JSON value (maps and slices of any), so
// that an emulator can hand out or keep a document nobody else changes.
func CloneJSON[T any](v T) T {
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			m := make(map[string]any, len(x))
			for k, c := range x {
				m[k] = walk(c)
			}
			return m
		case []any:
			s := make([]any, len(x))
			for i, c := range x {
				s[i] = walk(c)
			}
			return s
		}
		return v
	}
	out, _ := walk(v).(T)
	return out
}
