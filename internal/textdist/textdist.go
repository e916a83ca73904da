// Package textdist says how far apart two words are, for the "did you
// mean" of an error or a warning: toolgate's command line and policy check
// use it. It imports nothing but the standard library.
package textdist

// Closest is the name of names nearest to typed when it is near enough to
// be what was meant: at most two edits away, and fewer edits than typed
// has letters. It is "" when none is.
func Closest(typed string, names []string) string {
	best, bestDist := "", 3
	for _, n := range names {
		if d := Distance(typed, n); d < bestDist && d < len(typed) {
			best, bestDist = n, d
		}
	}
	return best
}

// Distance is the Levenshtein distance between a and b, in bytes.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
