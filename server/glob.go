package server

// globMatch reports whether s matches a Redis glob pattern (KEYS, SCAN
// MATCH, CONFIG GET): * any run, ? one byte, [abc] [^abc] [a-z] classes,
// and \ to take the next byte literally. It backtracks only to the last
// star, so its cost is bounded by len(pattern)*len(s) whatever the input.
//
// As in Redis, a match that has to look past more than maxStarRuns runs
// of stars fails: Redis's recursive matcher stops there to bound its
// stack, and KEYS must find what Redis finds.
func globMatch(pattern, s []byte, nocase bool) bool {
	if len(s) == 0 {
		return len(pattern) == 0 // Redis matches nothing against an empty string
	}
	p, i := 0, 0
	starP, starI := -1, 0
	starRuns := 0
	for i < len(s) {
		if p < len(pattern) {
			if pattern[p] == '*' {
				for p < len(pattern) && pattern[p] == '*' {
					p++
				}
				if p == len(pattern) {
					return true
				}
				if starRuns++; starRuns > maxStarRuns {
					return false
				}
				starP, starI = p, i
				continue
			}
			if next, ok := matchOne(pattern, p, s[i], nocase); ok {
				p, i = next, i+1
				continue
			}
		}
		if starP < 0 {
			return false
		}
		starI++
		p, i = starP, starI
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// maxStarRuns is how many runs of stars Redis's matcher looks past
// (its recursion limit).
const maxStarRuns = 1000

// matchOne matches the pattern element at p against c and returns the
// index of the next element.
func matchOne(pattern []byte, p int, c byte, nocase bool) (next int, ok bool) {
	switch pattern[p] {
	case '?':
		return p + 1, true
	case '[':
		return matchClass(pattern, p+1, c, nocase)
	case '\\':
		if p+1 < len(pattern) {
			p++
		}
	}
	return p + 1, equalByte(pattern[p], c, nocase)
}

// matchClass matches c against the class starting after '['.
func matchClass(pattern []byte, p int, c byte, nocase bool) (next int, ok bool) {
	negate := p < len(pattern) && pattern[p] == '^'
	if negate {
		p++
	}
	match := false
	for p < len(pattern) && pattern[p] != ']' {
		switch {
		case pattern[p] == '\\' && p+1 < len(pattern):
			match = match || pattern[p+1] == c // escapes in a class compare exactly, as in Redis
			p += 2
		case p+2 < len(pattern) && pattern[p+1] == '-':
			lo, hi := pattern[p], pattern[p+2]
			if lo > hi {
				lo, hi = hi, lo
			}
			cc := c
			if nocase {
				lo, hi, cc = lower(lo), lower(hi), lower(c)
			}
			match = match || (cc >= lo && cc <= hi)
			p += 3
		default:
			match = match || equalByte(pattern[p], c, nocase)
			p++
		}
	}
	if p < len(pattern) {
		p++ // the closing ']'
	}
	return p, match != negate
}

func equalByte(a, b byte, nocase bool) bool {
	if nocase {
		return lower(a) == lower(b)
	}
	return a == b
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
